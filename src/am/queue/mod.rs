//! The queue of incoming AM messages: what the in-order draining of the
//! protocol's events (`messages/drain.rs`) leaves for handlers, with the
//! tag each request arrived under, and the remote memory request that holds
//! the draining up while its peer's answers back up. Dispatch takes from
//! it; remote memory only performs what comes out ahead of it.

pub(in crate::am) mod incoming;
