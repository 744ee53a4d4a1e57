//! The express lane: short requests and their replies straight into a shared-
//! memory ring (`lane.rs`), and its fast poll (`express_poll.rs`).

#[cfg(test)]
mod express_owed_tests;
#[cfg(test)]
mod express_pass_tests;
pub(in crate::am) mod express_poll;
#[cfg(test)]
mod express_resend_tests;
#[cfg(test)]
pub(in crate::am) mod express_tests;
pub(in crate::am) mod lane;
