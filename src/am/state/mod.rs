//! What an endpoint keeps, subsystem by subsystem, as plain data with its own
//! bookkeeping: every part of `EpState` that is not the protocol or the
//! tables. No file here knows the endpoint; the operations that need the
//! whole endpoint live in the rooms above it.

pub(in crate::am) mod batch;
pub(in crate::am) mod express;
pub(in crate::am) mod handler_names;
pub(in crate::am) mod outstanding;
pub(in crate::am) mod region;
pub(in crate::am) mod rma;
pub(in crate::am) mod services;
pub(in crate::am) mod txn;
pub(in crate::am) mod txn_map;
pub(in crate::am) mod txn_target;
