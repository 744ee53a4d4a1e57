//! What a program hands the AM layer and gets from it, with no endpoint
//! behind it: handlers and what they receive (`args.rs`), the messages
//! requests and replies carry and their limits (`message.rs`), endpoint names
//! (`name.rs`), the translation and handler tables (`tables.rs`).

pub(in crate::am) mod args;
pub(in crate::am) mod message;
pub(in crate::am) mod name;
pub(in crate::am) mod tables;
