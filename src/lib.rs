//! ramp: a Reliable Active Message Protocol library.
//!
//! Layers, top to bottom (see ARCHITECTURE.md): `ffi` (the C ABI), `am` (AM-2
//! semantics), `proto` (the sans-IO reliable protocol), `wire` (packet
//! format), `net` (transports). `sim` is a deterministic network simulator for
//! testing `proto`.

// `unsafe` is allowed only in `sys` (the OS calls) and `ffi` (the C ABI).
#![deny(unsafe_code)]

pub mod am;

pub mod config;
pub mod error;
pub mod fault;
#[allow(unsafe_code)]
pub mod ffi;
pub mod fxhash;
pub mod net;
pub mod proto;
mod rng;
pub mod sim;
pub mod spmd;
#[allow(unsafe_code)]
mod sys;
pub mod time;
pub mod wire;
