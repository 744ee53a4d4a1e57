//! SPMD job start-up and control: rank, size, barrier, all-gather, exit,
//! over ramp's local launcher or the PMI wire protocol (MPICH Hydra, Slurm).
//!
//! A process finds its role at start-up: under a PMI launcher every process
//! is a worker; started by ramp's local launcher (`ramp-run`, or the AMUDP
//! master form `./prog N L`) it is a worker of that master; otherwise it is
//! the master of the AMUDP form, which starts the workers and never returns.
//!
//! The job key (`RAMP_JOB_KEY`, the secret every packet's MAC is made with)
//! reaches the workers out of band, never on a command line:
//! - ramp's local launcher (`ramp-run`, the AMUDP master form) puts 32
//!   random bytes (the kernel's, `sys::random`), as hex, in every worker's environment
//!   ([`job_key_for_workers`]); a `RAMP_JOB_KEY` the user set is inherited
//!   instead; `RAMP_AUTH=off` sends none.
//! - Under PMI, [`start_worker`] asks the bootstrap
//!   ([`Bootstrap::share_job_key`]) before it opens the endpoint: rank 0
//!   puts its `RAMP_JOB_KEY` (or a new random key) in the job's key-value
//!   space, all ranks get it after the fence, and each hands it to
//!   `config::set_job_key`. (The key-value space is the launcher's: Hydra's
//!   proxies carry it between hosts in the clear, like the rest of PMI.)
//! - The endpoint reads the key when it builds its protocol configuration
//!   (`Config::mac_job_key`: the key set at run time, else `RAMP_JOB_KEY`).
//!
//! Published endpoint names (`ramp_NamePublish`, `ramp_NameLookup`) are
//! kept by the job's ranks themselves, each service by the rank its hash
//! picks, and travel as ramp messages between the job endpoints (no
//! launcher key-value space, no collective): `names.rs`.

mod bootstrap;
mod ending;
mod foreign;
mod frame;
#[cfg(feature = "testing")]
pub mod fuzz;
mod local;
pub(crate) mod master;
mod master_form;
mod names;
mod notice;
#[cfg(feature = "testing")]
pub mod pmi1;
#[cfg(not(feature = "testing"))]
mod pmi1;
mod pmi2;
mod pmi_wire;
mod pmix;
mod spawn;

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use once_cell::sync::Lazy;
use parking_lot::Mutex;

pub use bootstrap::{Bootstrap, Progress};
pub use ending::{end_process, set_exit_callback, set_kill_hook};
pub(crate) use ending::{finalize_launcher, park_if_ending, set_launcher_finalize};
use ending::{watch_ends, EXIT_CALLBACK, KILL};
pub use master::{run_job, ExternalJob, JobSpec, Spawner};
pub use master_form::run_master_form;
pub use names::{
    lookup as name_lookup, publish as name_publish, service_owner, valid_service, MAX_SERVICE,
};

use crate::am::{self, Bundle, BundleMode, Endpoint, EndpointName};
use crate::error::{Error, Result};

/// AMUDP's default network depth.
pub const DEFAULT_DEPTH: u32 = 128;

/// How this process takes part in a job.
pub enum Role {
    Worker(Box<dyn Bootstrap>),
    /// Not started by any launcher: the master of the AMUDP form.
    Master,
}

/// Whether the environment marks this process as a worker of some launcher.
pub fn is_worker_env() -> bool {
    crate::config::global().is_ok_and(|c| c.spmd.master.is_some())
        || std::env::var_os("PMI_FD").is_some()
        || std::env::var_os("PMI_PORT").is_some()
        || pmix::present()
}

/// Finds the role from the environment and connects to the launcher. A bad
/// `RAMP_*` variable is an error naming it.
pub fn detect_role() -> io::Result<Role> {
    config()?;
    if let Some(b) = pmi_bootstrap()? {
        return Ok(Role::Worker(b));
    }
    if let Some(w) = local::LocalWorker::from_env()? {
        return Ok(Role::Worker(Box::new(w)));
    }
    if let Some(why) = foreign::refusal() {
        return Err(io::Error::new(io::ErrorKind::Unsupported, why));
    }
    Ok(Role::Master)
}

/// The process-wide configuration, or its error (every bad variable named).
fn config() -> io::Result<&'static crate::config::Config> {
    crate::config::global().map_err(|m| io::Error::new(io::ErrorKind::InvalidInput, m))
}

/// The PMI client when a PMI launcher (mpiexec, srun --mpi=pmi2) started
/// this process.
fn pmi_bootstrap() -> io::Result<Option<Box<dyn Bootstrap>>> {
    let b = if pmix::present() && std::env::var_os("PMI_FD").is_none() {
        Some(Box::new(pmix::PmixBoot::connect()?) as Box<dyn Bootstrap>)
    } else {
        pmi1::from_env()?
    };
    // Under srun the ranks tell each other of an exit with a code
    // (notice.rs): Slurm's own abort ends the job by signals.
    if under_slurm() {
        return Ok(b.map(|b| Box::new(notice::Notifying::new(b)) as Box<dyn Bootstrap>));
    }
    Ok(b)
}

/// Whether srun started this process (a Slurm job step).
fn under_slurm() -> bool {
    std::env::var_os("SLURM_STEP_ID").is_some() && std::env::var_os("SLURM_JOB_ID").is_some()
}

/// The job this process belongs to, once started.
struct Job {
    boot: Box<dyn Bootstrap>,
    bundle: Arc<Bundle>,
    endpoint: Arc<Endpoint>,
    network_pid: u64,
}

/// What a call needing the job says before start-up.
const NOT_STARTED: &str = "the SPMD job is not started: call ramp_SPMDStartup \
     (AMUDP_SPMDStartup; Python: ramp.spmd.startup()) first, in a process a launcher \
     started (ramp-run -n N prog)";

static JOB: Lazy<Mutex<Option<Job>>> = Lazy::new(|| Mutex::new(None));

thread_local! {
    /// Whether this thread runs an SPMD collective (and so holds `JOB`):
    /// an SPMD call from a handler run by its progress is refused, not
    /// deadlocked. Other holders of `JOB` (the watcher thread, a moment
    /// at a time; another thread's collective) are waited for.
    static IN_COLLECTIVE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `JOB`, locked: `Resource` when this thread runs a collective already
/// (an SPMD call from a handler inside it), else waits for the lock.
fn lock_job(what: &'static str) -> Result<parking_lot::MutexGuard<'static, Option<Job>>> {
    if IN_COLLECTIVE.with(|c| c.get()) {
        return Err(Error::Resource(what));
    }
    Ok(JOB.lock())
}

/// Marks this thread as running a collective while alive.
struct CollectiveMark;

impl CollectiveMark {
    fn new() -> Self {
        IN_COLLECTIVE.with(|c| c.set(true));
        CollectiveMark
    }
}

impl Drop for CollectiveMark {
    fn drop(&mut self) {
        IN_COLLECTIVE.with(|c| c.set(false));
    }
}
static RANK: AtomicI64 = AtomicI64::new(-1);
static SIZE: AtomicI64 = AtomicI64::new(-1);

pub fn rank() -> Option<usize> {
    usize::try_from(RANK.load(Ordering::Relaxed)).ok()
}

pub fn size() -> Option<usize> {
    usize::try_from(SIZE.load(Ordering::Relaxed)).ok()
}

pub fn started() -> bool {
    rank().is_some()
}

/// The tag of rank `r` in a job with network pid `pid` (as AMUDP makes them).
pub fn tag_of(pid: u64, r: usize) -> u64 {
    pid ^ ((r as u64) << 16)
}

/// A network pid from a launcher's job id: bits 16..31 are left for the
/// rank, and the low bits are never 0 or 1 so no tag is AM_NONE or AM_ALL.
fn network_pid(job_id: u64) -> u64 {
    (job_id & 0xffff_ffff_0000_0000) | (job_id & 0xfffc) | 2
}

/// Polls the job's bundle and sleeps until something happens (a datagram,
/// a protocol timer, or the launcher's descriptor), at most 10 ms.
fn progress_on(bundle: &Bundle, fd: Option<RawFd>) {
    let _ = bundle.poll();
    bundle.wait_for_activity_with(fd, 10);
}

/// Starts this process as a worker: one endpoint mapped to every rank
/// (index i = rank i), its tag set, resources set. `depth` 0 means the
/// launcher's choice or the environment (RAMP_NETWORK_DEPTH, see `config`).
pub fn start_worker(
    mut boot: Box<dyn Bootstrap>,
    depth: u32,
) -> Result<(Arc<Bundle>, Arc<Endpoint>, u64)> {
    if started() {
        return Err(Error::Resource("the SPMD job is already started"));
    }
    am::init()?;
    let (rank, size) = (boot.rank(), boot.size());
    // (a size from the environment or the launcher's wire: every rank's
    // name is gathered before the table refuses it, 32 bytes a rank)
    if size > am::MAX_TRANSLATIONS {
        eprintln!(
            "ramp: rank {rank}: the launcher says the job has {size} processes; an endpoint \
             maps at most {} (AM_MaxNumTranslations)",
            am::MAX_TRANSLATIONS
        );
        return Err(Error::Resource(
            "the launcher's job size is larger than an endpoint's translation table",
        ));
    }
    let bundle = am::allocate_bundle(BundleMode::Seq)?;
    // the job key, where the launcher shares it at run time (PMI), before
    // the endpoint is opened: it builds its protocol configuration with it
    let key = boot
        .share_job_key(&mut |fd| progress_on(&bundle, fd))
        .map_err(|e| {
            eprintln!("ramp: rank {rank}: sharing the job key failed: {e}");
            Error::Resource("sharing the job key through the launcher failed")
        })?;
    if let Some(k) = key {
        crate::config::set_job_key(&k).map_err(|e| {
            eprintln!("ramp: rank {rank}: the job key from rank 0 is refused: {e}");
            Error::Resource("the job key from rank 0 is refused")
        })?;
    }
    let ep = am::allocate_endpoint(&bundle)?;
    let net_pid = network_pid(boot.job_id());
    let names = boot
        .allgather(&ep.name().0, &mut |fd| progress_on(&bundle, fd))
        .map_err(|e| {
            eprintln!("ramp: rank {rank}: exchanging endpoint names failed: {e}");
            Error::Resource("exchanging endpoint names with the launcher failed")
        })?;
    ep.set_num_translations(size as i64)?;
    for (i, n) in names.chunks_exact(32).enumerate() {
        let mut a = [0u8; 32];
        a.copy_from_slice(n);
        ep.map(i as i64, EndpointName(a), tag_of(net_pid, i))?;
    }
    ep.set_tag(tag_of(net_pid, rank));
    // am::init above refused a bad configuration.
    let env_depth = crate::config::global()
        .ok()
        .and_then(|c| c.spmd.network_depth);
    let depth = boot
        .depth()
        .filter(|&d| d > 0)
        .or(Some(depth).filter(|&d| d > 0))
        .or(env_depth)
        .unwrap_or(DEFAULT_DEPTH);
    ep.set_expected_resources(size as i32, depth as i32)?;
    RANK.store(rank as i64, Ordering::Relaxed);
    SIZE.store(size as i64, Ordering::Relaxed);
    let watched = boot.control_fd();
    *JOB.lock() = Some(Job {
        boot,
        bundle: bundle.clone(),
        endpoint: ep.clone(),
        network_pid: net_pid,
    });
    if let Some(fd) = watched {
        watch_ends(fd);
    }
    Ok((bundle, ep, net_pid))
}

/// `N` random bytes (`sys::random`): the launchers' secrets (job keys, the
/// local master's token and job id, srun's exit-notice secrets).
pub(crate) fn random_bytes<const N: usize>() -> io::Result<[u8; N]> {
    crate::sys::random::random_bytes()
}

/// A new job key: 32 random bytes as 64 hex digits.
pub(crate) fn new_job_key() -> io::Result<String> {
    Ok(pmi_wire::hex(&random_bytes::<32>()?))
}

/// The job key a launcher puts in its workers' environment: none when
/// `RAMP_AUTH=off` or when the user set `RAMP_JOB_KEY` (the workers inherit
/// it), else a new random one.
pub(crate) fn job_key_for_workers() -> io::Result<Option<String>> {
    let c = config()?;
    if c.auth == crate::config::Auth::Off || c.job_key.is_some() {
        return Ok(None);
    }
    new_job_key().map(Some)
}

/// The job key shared by rank 0 through a PMI key-value space (see the
/// module doc): none when `RAMP_AUTH=off`.
pub(crate) fn rank0_job_key() -> io::Result<Option<String>> {
    let c = config()?;
    if c.auth == crate::config::Auth::Off {
        return Ok(None);
    }
    match &c.job_key {
        Some(k) => Ok(Some(k.expose().to_string())),
        None => new_job_key().map(Some),
    }
}

/// The bundle and endpoint of the job.
/// None outside a job, and inside a handler run by a collective of this
/// thread.
pub fn job_endpoint() -> Option<(Arc<Bundle>, Arc<Endpoint>, u64)> {
    lock_job("")
        .ok()?
        .as_ref()
        .map(|j| (j.bundle.clone(), j.endpoint.clone(), j.network_pid))
}

/// Runs a collective with the job's bootstrap; handlers keep running
/// meanwhile. A Kill from the launcher ends the process here.
fn collective<T>(
    f: impl FnOnce(&mut dyn Bootstrap, &mut Progress<'_>) -> io::Result<T>,
) -> Result<T> {
    // (the watcher thread holds the lock for a moment when the connection
    // is readable: waited for; a collective of this thread, from a handler,
    // holds it for good: refused)
    let mut guard = lock_job("an SPMD collective is already running (inside a handler?)")?;
    let _mark = CollectiveMark::new();
    let job = guard.as_mut().ok_or(Error::NotInit(NOT_STARTED))?;
    let bundle = job.bundle.clone();
    let r = f(job.boot.as_mut(), &mut |fd| progress_on(&bundle, fd));
    match r {
        Ok(v) => {
            // an order to end that came right behind the collective's answer
            // was read with it: the watcher thread cannot see it
            if job.boot.control_fd().is_some() {
                if let Some(code) = job.boot.end_ordered() {
                    drop(guard);
                    end_process(code);
                }
            }
            Ok(v)
        }
        Err(e) => {
            if let Some(code) = job.boot.take_kill() {
                drop(guard);
                end_process(code);
            }
            eprintln!(
                "ramp: rank {}: SPMD collective failed: {e}",
                rank().map_or(-1, |r| r as i64)
            );
            Err(Error::Resource(
                "the SPMD collective failed (the launcher is gone?)",
            ))
        }
    }
}

/// Flushes our stdout, then every rank waits for all the others.
/// The SPMD barrier: returns once every rank has called it AND every
/// request this rank sent before it has run its handler at its target
/// (its reply, automatic or not, has come back, or it was refused or
/// failed), so "send, barrier, read what arrived" is correct on every rank.
/// The launcher's barrier alone does not wait for messages in flight.
pub fn barrier() -> Result<()> {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    drain_requests()?;
    collective(|b, p| b.barrier(p))
}

/// Polls the job's bundle (handlers run) until the job endpoint has no
/// unanswered request. A dead target ends the wait too: its requests fail
/// after the peer timeout and come back to handler 0.
fn drain_requests() -> Result<()> {
    if am::in_handler() {
        return Err(Error::Resource(
            "the SPMD barrier was called inside a handler (handlers must not block)",
        ));
    }
    let Some((bundle, ep, _)) = job_endpoint() else {
        return Err(Error::NotInit(NOT_STARTED));
    };
    let mut spins = 0u32;
    while ep.unanswered_requests() > 0 {
        bundle.poll()?;
        spins += 1;
        if spins > 1000 {
            bundle.wait_for_activity(1);
        }
    }
    Ok(())
}

/// Every rank gives `data` (same length everywhere); all get the
/// concatenation in rank order.
pub fn allgather(data: &[u8]) -> Result<Vec<u8>> {
    if data.is_empty() {
        return Err(Error::BadArg("all-gather of zero bytes"));
    }
    collective(|b, p| b.allgather(data, p))
}

/// The first `KEY=VALUE` of the launcher's environment whose key starts
/// with `prefix`.
pub fn env_entry_with_prefix(prefix: &str) -> Option<String> {
    let g = lock_job("").ok()?;
    g.as_ref()?
        .boot
        .master_env()
        .into_iter()
        .find(|(k, _)| k.starts_with(prefix))
        .map(|(k, v)| format!("{k}={v}"))
}

pub fn getenv_master(key: &str) -> Option<String> {
    lock_job("")
        .ok()?
        .as_ref()
        .and_then(|j| j.boot.getenv_master(key))
}

/// SPMDExit: tells the launcher the job ends with `code`, then ends this
/// process. Errors only when the job was never started.
pub fn exit(code: i32) -> Result<std::convert::Infallible> {
    {
        let mut g = lock_job("SPMDExit inside a handler run by an SPMD collective")?;
        let job = g.as_mut().ok_or(Error::NotInit(NOT_STARTED))?;
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        if let Err(e) = job.boot.finalize(code) {
            eprintln!("ramp: telling the launcher about the exit failed: {e}");
        }
    }
    end_process(code)
}

/// Asks the launcher to stop the whole job.
pub fn abort(code: i32, msg: &str) -> ! {
    // (inside a handler run by a collective of this thread the launcher
    // is not told: the process ends, which it sees)
    if let Ok(mut g) = lock_job("") {
        if let Some(j) = g.as_mut() {
            j.boot.abort(code, msg);
        }
    }
    end_process(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The watcher thread holds `JOB` a moment at a time: an SPMD call of
    /// another thread waits for it instead of being refused (a publish in a
    /// job was refused "already running" once in CI).
    #[test]
    fn an_spmd_call_waits_for_another_threads_hold_and_refuses_its_own() {
        let (locked, wait_locked) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            let _g = JOB.lock();
            locked.send(()).unwrap();
            crate::clock::Clock::Real.sleep(20 * crate::time::MILLIS);
        });
        wait_locked.recv().unwrap();
        assert!(lock_job("held elsewhere").is_ok());
        holder.join().unwrap();
        let _mark = CollectiveMark::new();
        assert!(matches!(lock_job("mine"), Err(Error::Resource("mine"))));
        assert!(job_endpoint().is_none());
        drop(_mark);
        assert!(lock_job("free").is_ok());
    }
}
