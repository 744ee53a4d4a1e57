//! Remote memory: one-sided puts and gets at the initiator (`initiator.rs`), the
//! chunks on the wire and at the target (`rma_target.rs`), direct copies to a
//! same-host peer (`rma_direct.rs`, `xfer_direct.rs`) and regions and
//! segments shared through memory (`rma_shared.rs`, `xfer_shared.rs`), and long
//! requests through a staging area both map (`xfer_staged.rs`).

pub(in crate::am) mod initiator;
pub(in crate::am) mod rma_direct;
#[cfg(test)]
mod rma_direct_tests;
pub(in crate::am) mod rma_shared;
pub(in crate::am) mod rma_target;
#[cfg(test)]
mod rma_tests;
pub(in crate::am) mod xfer_direct;
pub(in crate::am) mod xfer_shared;
#[cfg(test)]
mod xfer_shared_tests;
pub(in crate::am) mod xfer_split;
#[cfg(test)]
mod xfer_split_tests;
pub(in crate::am) mod xfer_staged;
#[cfg(test)]
mod xfer_staged_tests;
