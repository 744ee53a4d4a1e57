//! Launchers ramp cannot serve: a process that one of them started must not
//! become the master of the AMUDP form (each task would start a job of its
//! own), so start-up stops with a message naming the launcher and what to
//! install or pass.

/// The reason this process cannot join its launcher, when the environment
/// shows a launcher but none that ramp speaks (called after the PMI, PMIx
/// and local-launcher checks found nothing).
pub(super) fn refusal() -> Option<String> {
    let has = |k: &str| std::env::var_os(k).is_some();
    if has("SLURM_STEP_ID") && has("SLURM_PROCID") {
        return Some(
            "ramp: started by srun without a process-management interface ramp speaks \
             (no PMI_FD, PMI2_* or PMIX_* variables): run srun --mpi=pmi2 (or --mpi=pmix with \
             libpmix2 installed before slurmd starts), or set MpiDefault=pmi2 in slurm.conf; \
             srun --mpi=list shows the choices"
                .into(),
        );
    }
    if has("OMPI_COMM_WORLD_SIZE") || has("OMPI_COMM_WORLD_RANK") {
        return Some(
            "ramp: started by Open MPI's mpirun without PMIx variables (PMIX_RANK, \
             PMIX_NAMESPACE): ramp needs Open MPI 4 or later, whose mpirun serves PMIx \
             (Debian: apt-get install openmpi-bin libpmix2), or start the job with ramp-run, \
             mpiexec (MPICH) or srun --mpi=pmi2"
                .into(),
        );
    }
    if has("PMI_RANK") || has("PMI_SIZE") || has("PMI_ID") {
        return Some(
            "ramp: PMI_RANK/PMI_SIZE/PMI_ID are set but neither PMI_FD nor PMI_PORT: the \
             launcher does not serve the PMI-1/PMI-2 wire protocol ramp speaks; start the job \
             with mpiexec (MPICH Hydra), srun --mpi=pmi2 or --mpi=pmix, Open MPI's mpirun, \
             or ramp-run"
                .into(),
        );
    }
    None
}
