//! SPMD job start-up and control: rank, size, barrier, all-gather, exit,
//! over ramp's local launcher or the PMI wire protocol (MPICH Hydra, Slurm).

pub mod bootstrap;

pub use bootstrap::{Bootstrap, Progress};
