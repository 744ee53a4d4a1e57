//! Bundles: endpoints polled together and AM_WaitSema (`set.rs`), the
//! list a thread polled last, kept without atomics (`polled.rs`), a
//! bundle's progress thread (`progress.rs`), and pull-style receive,
//! delivered messages handed to the caller (`pull.rs`); the Rust API's
//! beginnings and ends: init, allocate, free, move (`lifetime.rs`).

pub(in crate::am) mod lifetime;
mod polled;
#[cfg(test)]
mod polled_tests;
pub(in crate::am) mod progress;
pub(in crate::am) mod pull;
#[cfg(test)]
mod pull_express_tests;
pub(in crate::am) mod set;
