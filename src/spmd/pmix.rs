//! A PMIx client, for `srun --mpi=pmix` and Open MPI's `mpirun`, over the
//! system's PMIx library (`libpmix.so.2`, Debian's libpmix2), loaded at run
//! time only when the PMIx environment is present (`sys/pmix.rs`).
//!
//! Rank from `PMIx_Init`, size from `pmix.job.size`, the all-gather as
//! put (global scope) / commit / fence (collecting the data) / get, the
//! barrier a fence, abort `PMIx_Abort` with the code, finalize
//! `PMIx_Finalize`. A fence is started non-blocking and waited for with
//! the caller's progress, so AM handlers keep running meanwhile.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::bootstrap::{Bootstrap, Progress};
use super::pmi_wire::{hash64, kvs_allgather, kvs_share_job_key, Kvs};
use crate::sys::pmix::{Pmix, PmixError};

/// Whether the environment says a PMIx server started this process.
pub(super) fn present() -> bool {
    std::env::var_os("PMIX_RANK").is_some() && std::env::var_os("PMIX_NAMESPACE").is_some()
}

/// A failed PMIx call as an error; never returns while a job-end notice is
/// ending this process (the watcher finalized the library under the call).
fn err(what: &str, e: PmixError) -> io::Error {
    super::park_if_ending();
    io::Error::other(format!("PMIx {what}: {e}"))
}

/// A connected, initialised PMIx client.
pub struct PmixBoot {
    lib: Pmix,
    rank: usize,
    size: usize,
    seq: u64,
    job_id: u64,
    /// Set by whichever finalizes first: `finalize`, or the launcher
    /// finalize hook (`super::finalize_launcher`) of a notified rank.
    finalized: Arc<AtomicBool>,
}

impl PmixBoot {
    /// Loads the library and initialises; the error names the package to
    /// install when the library is missing.
    pub(super) fn connect() -> io::Result<PmixBoot> {
        let lib = Pmix::open_and_init().map_err(|(loaded, why)| {
            let launcher = if std::env::var_os("SLURM_STEP_ID").is_some() {
                "srun --mpi=pmix"
            } else if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some() {
                "Open MPI's mpirun"
            } else {
                "a PMIx launcher"
            };
            let what = if loaded {
                format!("joining its PMIx server failed: {why}")
            } else {
                format!(
                    "the PMIx library cannot be loaded ({why}); install it (Debian/Ubuntu: \
                     apt-get install libpmix2)"
                )
            };
            io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "ramp: started by {launcher} (PMIX_RANK/PMIX_NAMESPACE are set), but \
                     {what}; or start the job with srun --mpi=pmi2, mpiexec (MPICH) or ramp-run"
                ),
            )
        })?;
        let size = lib.job_size().map_err(|e| err("get pmix.job.size", e))? as usize;
        let rank = lib.rank() as usize;
        if size < 1 || rank >= size {
            return Err(io::Error::other(format!(
                "PMIx: rank {rank} is not within job size {size}"
            )));
        }
        let job_id = hash64(&lib.namespace());
        let finalized = Arc::new(AtomicBool::new(false));
        // A rank ended by a job-end notice (notice.rs) exits from the
        // watcher's thread, while this boot may be inside a fence on the
        // main thread: it finalizes through this hook, since Slurm's
        // mpi/pmix plugin cancels the whole step (srun then says 137) when
        // a client goes away without PMIx_Finalize.
        let (fin, flag) = (lib.finalizer(), finalized.clone());
        super::set_launcher_finalize(Box::new(move || {
            if !flag.swap(true, Ordering::AcqRel) {
                let _ = fin.run();
            }
        }));
        Ok(PmixBoot {
            lib,
            rank,
            size,
            seq: 0,
            job_id,
            finalized,
        })
    }

    fn fence(&mut self, collect: bool, progress: &mut Progress<'_>) -> io::Result<()> {
        let f = self.lib.fence_start(collect).map_err(|e| err("fence", e))?;
        loop {
            if let Some(r) = self.lib.fence_result(&f) {
                return r.map_err(|e| err("fence", e));
            }
            progress(None);
        }
    }
}

impl Kvs for PmixBoot {
    fn put(&mut self, key: &str, val: &str, _progress: &mut Progress<'_>) -> io::Result<()> {
        self.lib.put_string(key, val).map_err(|e| err("put", e))
    }

    fn exchange(&mut self, progress: &mut Progress<'_>) -> io::Result<()> {
        self.lib.commit().map_err(|e| err("commit", e))?;
        self.fence(true, progress)
    }

    fn get(&mut self, key: &str, src: usize, _progress: &mut Progress<'_>) -> io::Result<String> {
        self.lib
            .get_string(src as u32, key)
            .map_err(|e| err(&format!("get {key} of rank {src}"), e))
    }

    fn chunk_hex(&self) -> usize {
        1 << 20
    }
}

impl Bootstrap for PmixBoot {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn allgather(&mut self, data: &[u8], progress: &mut Progress<'_>) -> io::Result<Vec<u8>> {
        let seq = self.seq;
        self.seq += 1;
        if data.is_empty() {
            self.barrier(progress)?;
            return Ok(Vec::new());
        }
        let (rank, size) = (self.rank, self.size);
        kvs_allgather(self, seq, rank, size, data, progress)
    }

    fn barrier(&mut self, progress: &mut Progress<'_>) -> io::Result<()> {
        self.fence(false, progress)
    }

    fn getenv_master(&self, key: &str) -> Option<String> {
        std::env::var(key).ok()
    }

    fn finalize(&mut self, code: i32) -> io::Result<()> {
        if self.finalized.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        if code != 0 && self.size > 1 && super::under_slurm() {
            // Under srun (when the job-end notices could not end the others)
            // a non-zero exit ends nothing without `-K`: the others would
            // wait for this rank forever. Abort the step with the code.
            self.lib.abort(code, "exit with a non-zero code");
            return Ok(());
        }
        // Elsewhere (Open MPI's mpirun) a process that exits non-zero after
        // finalize ends the job with its status; PMIx_Abort is avoided there
        // because mpirun sometimes never reaps its processes after one (2 in
        // 20 runs of `mpirun -n 4 spmd_hello 3` hung with 4 defunct children).
        self.lib.finalize().map_err(|e| err("finalize", e))
    }

    fn abort(&mut self, code: i32, msg: &str) {
        if !self.finalized.load(Ordering::Acquire) {
            self.lib.abort(code, msg);
        }
    }

    fn job_id(&self) -> u64 {
        self.job_id
    }

    fn share_job_key(&mut self, progress: &mut Progress<'_>) -> io::Result<Option<String>> {
        let rank = self.rank;
        kvs_share_job_key(self, rank, progress)
    }
}
