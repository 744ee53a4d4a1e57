//! C-visible types of the ABI (`include/am.h`, `include/ramp.h`).
#![allow(non_camel_case_types, non_snake_case)]

use std::os::raw::c_int;

use crate::am::EndpointName;

/// Opaque bundle, named only through `eb_t` handles.
#[repr(C)]
pub struct ramp_bundle {
    _private: [u8; 0],
}

/// Opaque endpoint, named only through `ep_t` handles.
#[repr(C)]
pub struct ramp_endpoint {
    _private: [u8; 0],
}

/// A bundle handle (the bundle's id; never dereferenced).
pub type eb_t = *mut ramp_bundle;
/// An endpoint handle (the endpoint's id; never dereferenced).
pub type ep_t = *mut ramp_endpoint;
pub type tag_t = u64;
pub type handler_t = u8;
/// Only in the C header (handler 0's opcode type); no Rust code uses it.
#[allow(dead_code)]
pub type op_t = c_int;
/// A handler function of any of the AM-2 prototypes.
pub type am_handler_fn_t = Option<unsafe extern "C" fn()>;

/// An endpoint name: 32 opaque bytes, copied by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct en_t {
    pub _opaque: [u64; 4],
}

impl From<EndpointName> for en_t {
    fn from(n: EndpointName) -> en_t {
        let mut o = [0u64; 4];
        for (i, w) in o.iter_mut().enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(&n.0[i * 8..i * 8 + 8]);
            *w = u64::from_ne_bytes(b);
        }
        en_t { _opaque: o }
    }
}

impl From<en_t> for EndpointName {
    fn from(e: en_t) -> EndpointName {
        let mut b = [0u8; 32];
        for (i, w) in e._opaque.iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_ne_bytes());
        }
        EndpointName(b)
    }
}

/// Message categories, also the index of the `[3]` arrays of `ramp_stats_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // the C names
pub enum ramp_category_t {
    ramp_Short = 0,
    ramp_Medium = 1,
    ramp_Long = 2,
    /// Only for C (the length of the `[3]` arrays).
    #[allow(dead_code)]
    ramp_NumCategories = 3,
}
