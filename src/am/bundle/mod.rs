//! Bundles: endpoints polled together and AM_WaitSema (`set.rs`), a
//! bundle's progress thread (`progress.rs`), and pull-style receive,
//! delivered messages handed to the caller (`pull.rs`); the Rust API's
//! beginnings and ends: init, allocate, free, move (`lifetime.rs`).

pub(in crate::am) mod lifetime;
pub(in crate::am) mod progress;
pub(in crate::am) mod pull;
pub(in crate::am) mod set;
