//! The endpoint itself: `EpState` (its transports, protocol, tables and the
//! subsystems' state of `state/`), the `Endpoint` that locks it, the calls
//! that set it up and read it (`core.rs`), and the host it runs on
//! (`host.rs`).

pub(in crate::am) mod core;
#[cfg(test)]
mod endpoint_tests;
pub(in crate::am) mod host;
pub mod paths;
