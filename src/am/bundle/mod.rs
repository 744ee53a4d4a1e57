//! Bundles: endpoints polled together and AM_WaitSema (`bundle.rs`), a
//! bundle's progress thread (`progress.rs`), and pull-style receive,
//! delivered messages handed to the caller (`pull.rs`).

pub(in crate::am) mod bundle;
pub(in crate::am) mod lifetime;
pub(in crate::am) mod progress;
pub(in crate::am) mod pull;
