//! The C ABI (to come) and the operating-system calls that need `unsafe`.

pub mod os;
