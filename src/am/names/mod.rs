//! Names at the AM layer: handler names and their look-ups at peers
//! (`handler_names.rs`, wire kinds 8, 9), and published endpoint names,
//! services (`services.rs`, wire kinds 12, 13).

pub(in crate::am) mod handler_names;
pub(in crate::am) mod services;
