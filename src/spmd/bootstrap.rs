//! How a worker meets the rest of its job: the launcher-specific part of
//! SPMD start-up (ramp's local launcher, or PMI under mpiexec / srun).

use std::io;
use std::os::fd::RawFd;

/// Called while a collective waits, with the descriptor the bootstrap waits
/// on, so the caller can poll its AM endpoints and sleep on both.
pub type Progress<'a> = dyn FnMut(Option<RawFd>) + 'a;

pub trait Bootstrap: Send {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// Collective all-gather of `data` (the same length on every rank);
    /// returns size * len bytes in rank order. While waiting it calls
    /// `progress` at least every few milliseconds.
    fn allgather(&mut self, data: &[u8], progress: &mut Progress<'_>) -> io::Result<Vec<u8>>;
    /// Collective barrier; calls `progress` while waiting.
    fn barrier(&mut self, progress: &mut Progress<'_>) -> io::Result<()>;
    /// The launcher's environment at start-up (the master's for the local
    /// launcher; the process's own for PMI).
    fn getenv_master(&self, key: &str) -> Option<String>;
    /// Every variable of the launcher's environment.
    fn master_env(&self) -> Vec<(String, String)> {
        std::env::vars().collect()
    }
    /// Normal end: tells the launcher this process exits with `code`.
    fn finalize(&mut self, code: i32) -> io::Result<()>;
    /// Abnormal end: asks the launcher to stop the whole job with `code`.
    fn abort(&mut self, code: i32, msg: &str);
    /// An id shared by all ranks of the job (network pid and tags derive from it).
    fn job_id(&self) -> u64;
    /// The launcher ordered this process to exit (with this code) while it
    /// waited in a collective, which then failed with `Interrupted`.
    fn take_kill(&mut self) -> Option<i32> {
        None
    }
    /// Collective, before the endpoint opens: the job key when this
    /// launcher shares it at run time (PMI: rank 0's, through the key-value
    /// space); `None` when it comes in the environment (ramp's launcher) or
    /// `RAMP_AUTH=off`.
    fn share_job_key(&mut self, _progress: &mut Progress<'_>) -> io::Result<Option<String>> {
        Ok(None)
    }
    /// Network depth chosen by the launcher, if it chooses one.
    fn depth(&self) -> Option<u32> {
        None
    }
    /// The descriptor on which the launcher may order this process to end
    /// outside a collective (ramp's local launcher: its control
    /// connection), watched by a thread of the job (`spmd::watch_ends`).
    fn control_fd(&self) -> Option<RawFd> {
        None
    }
    /// Outside a collective, with `control_fd` readable: the code the
    /// launcher ordered this process to end with, if that is what arrived.
    fn end_ordered(&mut self) -> Option<i32> {
        None
    }
}
