//! AM messages on their way: the request path and its credits (`request.rs`),
//! requests held for a batch (`batch.rs`), replies through a token
//! (`reply.rs`, `token.rs`), loopback (`loopback.rs`), the I/O driver
//! (`driver.rs`), long messages placed as they arrive (`placement.rs`), and
//! AM_Poll: checks on arrival, returned messages, handler calls
//! (`returned.rs`, `started.rs`, `dispatch.rs`).

#[cfg(test)]
mod backlog_tests;
pub(in crate::am) mod batch;
#[cfg(test)]
mod batch_tests;
#[cfg(test)]
mod digest_tests;
pub(in crate::am) mod dispatch;
pub(in crate::am) mod drain;
pub(in crate::am) mod driver;
pub(in crate::am) mod loopback;
pub(in crate::am) mod placement;
#[cfg(test)]
mod placement_tests;
#[cfg(test)]
mod placement_udp_tests;
pub(in crate::am) mod reply;
pub(in crate::am) mod request;
pub(in crate::am) mod returned;
pub(in crate::am) mod started;
pub(crate) mod token;
pub(in crate::am) mod work;
