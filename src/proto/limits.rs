//! The protocol's fixed limits, below every other room of `proto/` (the
//! receive side, the buffer pool and the configuration all bound by them).

/// The largest message (payload bytes) a receiver reassembles.
pub const MAX_MESSAGE: usize = 1 << 20;

/// Largest SACK distance (bits in the bitmap) and so the largest window.
pub const MAX_WINDOW: usize = 64;
