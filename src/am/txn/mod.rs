//! Transactions (issue 10): the initiator's kept requests, their acks, probes
//! and conclusions (`initiator.rs`, `txn_probe.rs`), the target's at-most-once
//! execution and kept replies (`txn_target.rs`), and the transaction log
//! wired in (`txn_log.rs`).

pub(in crate::am) mod initiator;
#[cfg(test)]
mod txn_crash_tests;
#[cfg(test)]
mod txn_id64_tests;
pub(in crate::am) mod txn_log;
#[cfg(test)]
mod txn_lost_ack_tests;
pub(in crate::am) mod txn_probe;
pub(in crate::am) mod txn_target;
#[cfg(test)]
mod txn_tests;
