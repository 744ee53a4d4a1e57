/*
 * ramp_spmd.h -- SPMD job start-up and control for ramp (includes <am.h> and <ramp.h>).
 *
 * One process per rank; every rank gets one bundle and one endpoint whose translation
 * table maps index i to rank i.  How a process finds its role (ramp_SPMDStartup):
 *   1. PMI (MPICH Hydra `mpiexec`, Slurm `srun --mpi=pmi2`): PMI_FD or PMI_PORT with
 *      PMI_RANK/PMI_SIZE in the environment -> a worker; there is no master process.
 *   2. ramp's local launcher (`ramp-run -n N prog args`, or the AMUDP form
 *      `./prog N L args`): RAMP_SPMD_MASTER, RAMP_SPMD_RANK, RAMP_SPMD_SIZE -> a worker.
 *   3. Otherwise -> the master: nproc from argv[1] (removed), optional spawner letter
 *      argv[2] (L, S or C; removed); it starts N workers, serves them and never returns
 *      (it exits with the job's exit code).
 * The AMUDP names (AMUDP_SPMD*, AMX_SPMD*) are provided by <amudp_spmd.h>.
 *
 * Every function returns an AM_* code unless noted.  After an internal error (a panic
 * inside ramp, reported on stderr as "ramp: internal error (panic) in NAME"), AM_*
 * functions return AM_ERR_RESOURCE (ramp_SPMDStartup too, even on the master),
 * ramp_SPMDNumProcs and ramp_SPMDMyProc -1, ramp_SPMDIsWorker and the spawners 0,
 * ramp_SPMDgetenvMaster and ramp_check_env_prefix NULL; ramp_SPMDExit, whose process
 * is already ending, aborts instead of returning.
 */
#ifndef RAMP_RAMP_SPMD_H
#define RAMP_RAMP_SPMD_H

#include "am.h"
#include "ramp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------
 * Types
 * ---------------------------------------------------------------------------------- */

/* Spawner: starts nproc workers running argv[0..argc-1] with extra_env (NULL-terminated
 * "NAME=VALUE" strings) added to their environment; returns non-zero on success. */
typedef int (*ramp_spawnfn_t)(int nproc, int argc, char **argv, char **extra_env);
/* Exit callback: runs with the exit code when this process shuts down through SPMDExit. */
typedef void (*ramp_exitcallback_t)(int);
/* One entry of ramp_Spawnfn_Desc: spawner letter, description, function. */
typedef struct { char abbrev; const char *desc; ramp_spawnfn_t fnptr; } ramp_spawnfn_desc_t;

/* The spawners, in AMUDP's order: 'S' ssh, 'L' local fork/exec, 'C' custom command
 * (settings: README, "AMUDP and GASNet names"); terminated by an entry with abbrev
 * '\0' (C shim data). */
extern const ramp_spawnfn_desc_t ramp_Spawnfn_Desc[];

/* ------------------------------------------------------------------------------------
 * Job start-up and control
 * ---------------------------------------------------------------------------------- */

/* Starts the job (call first, before parsing arguments): on a worker returns AM_OK with
 * *eb, *ep (and *networkpid if non-NULL) set; on the master does not return.  nproc 0:
 * from argv[1]; networkdepth 0: default; spawnfn NULL: letter argv[2] or SPAWNFN. */
int ramp_SPMDStartup(int *argc, char ***argv, int nproc, int networkdepth,
                     ramp_spawnfn_t spawnfn, uint64_t *networkpid, eb_t *eb, ep_t *ep);
/* Ends this process and the job with exitcode; does not return on success. */
int ramp_SPMDExit(int exitcode);
/* Sets the callback run by SPMDExit (NULL: none). */
int ramp_SPMDSetExitCallback(ramp_exitcallback_t fp);
/* Returns 1 in a worker (or a process started as one), 0 otherwise (argv is unused). */
int ramp_SPMDIsWorker(char **argv);
/* Returns the number of ranks, or -1 before start-up. */
int ramp_SPMDNumProcs(void);
/* Returns this process's rank (0-based), or -1 before start-up. */
int ramp_SPMDMyProc(void);
/* Barrier over all ranks; polls the SPMD bundle while waiting (handlers may run).
 * It returns only after (1) every rank has called it and (2) every request the calling
 * rank sent from its SPMD endpoint before the call has run its handler at its target
 * (its reply, or automatic reply, came back; or it was refused or failed and went to
 * handler 0). So "send requests, ramp_SPMDBarrier(), read what your handlers counted"
 * is correct on every rank, with no polling protocol of your own. Requests sent by
 * handlers while the barrier waits are waited for too. Not callable from a handler
 * (AM_ERR_RESOURCE). Also AMUDP_SPMDBarrier / AMX_SPMDBarrier. */
int ramp_SPMDBarrier(void);
/* All-gather: dest (len * nproc bytes) receives every rank's len bytes in rank order;
 * polls while waiting. */
int ramp_SPMDAllGather(void *source, void *dest, size_t len);
/* Returns the value of keyname in the launcher's environment at start-up, or NULL (do
 * not modify or free it). */
const char *ramp_SPMDgetenvMaster(const char *keyname);
/* Returns a "NAME=VALUE" entry of the launcher's environment whose name starts with
 * prefix, or NULL. */
const char *ramp_check_env_prefix(const char *prefix);

/* Spawners: pass them to ramp_SPMDStartup, never call them directly.  Any other
 * function passed is the program's own: the master calls it once with nproc, the
 * workers' argv and extra_env (the job's variables, secrets among them), and it must
 * start nproc processes running argv with extra_env added (they get their ranks in the
 * order they connect); it returns non-zero on success. */
int ramp_SPMDLocalSpawn(int nproc, int argc, char **argv, char **extra_env);
int ramp_SPMDSshSpawn(int nproc, int argc, char **argv, char **extra_env);
int ramp_SPMDCustomSpawn(int nproc, int argc, char **argv, char **extra_env);

/* ------------------------------------------------------------------------------------
 * Process-wide knobs and diagnostics (C shim data and variadics)
 * ---------------------------------------------------------------------------------- */

/* Called by SPMDExit to end the process (default _exit); may be replaced. */
extern void (*ramp_SPMDkillmyprocess)(int);
/* Non-zero: print every error return on stderr. */
extern int ramp_VerboseErrors;
/* Non-zero: suppress informational (non-error) output. */
extern int ramp_SilentMode;
/* Label of this process in messages (workers: "Node <rank>"), or NULL. */
extern const char *ramp_ProcessLabel;
/* Non-zero: sleep instead of spin-polling while waiting for send credits. */
extern int ramp_PoliteSync;
/* Prints "*** FATAL ERROR: <msg>" (with " (<ramp_ProcessLabel>)" when set) on stderr,
 * flushes stdout and stderr, and calls abort(); does not return. */
#if defined(__GNUC__)
__attribute__((__format__(__printf__, 1, 2), __noreturn__))
#endif
void ramp_FatalErr(const char *msg, ...);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RAMP_RAMP_SPMD_H */
