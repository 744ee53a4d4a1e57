//! ramp: a Reliable Active Message Protocol library.
//!
//! Layers, top to bottom (see DESIGN.md): `ffi` (the C ABI), `am` (AM-2
//! semantics), `proto` (the sans-IO reliable protocol), `wire` (packet
//! format), `net` (transports). `sim` is a deterministic network simulator for
//! testing `proto`.

pub mod am;
pub mod bench;
pub mod config;
pub mod error;
pub mod ffi;
pub mod fxhash;
pub mod net;
pub mod proto;
mod rng;
pub mod sim;
pub mod spmd;
pub mod time;
pub mod wire;
