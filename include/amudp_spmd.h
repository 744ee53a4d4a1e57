/*
 * amudp_spmd.h -- drop-in replacement for GASNet's AMUDP SPMD header, on top of ramp.
 *
 * Maps the AMUDP_SPMD* and AMX_SPMD* job-control names onto <ramp_spmd.h>; includes
 * <amudp.h>.  Command line of a program using AMX_SPMDStartup, as with AMUDP:
 *     prog <nproc> [L|S|C] <program args...>     e.g.  ./testping 2 L 1000
 * (the letter may be left out when SPAWNFN is set); the job may also be started by
 * ramp-run or by a PMI launcher (mpiexec, srun --mpi=pmi2), see <ramp_spmd.h>.
 *
 * Exits, as AMUDP's: when a rank calls AMUDP_SPMDExit(code) with code != 0 the job exits
 * with code, and every other rank ends at once, whatever it is doing (a thread of each
 * rank watches the launcher's connection): its exit callback runs with 0, then
 * AMUDP_SPMDkillmyprocess; no signal, no message.  A rank that dies without
 * AMUDP_SPMDExit (a signal, a crash, a non-zero exit) ends the job with 255 in the
 * master form (AMUDP's -1), the other ranks likewise (exit callback with 255).
 *
 * Differences from AMUDP:
 *  - After AMUDP_SPMDExit(0) on one rank, the others get 5 s to finish on their own
 *    before they are ended that way (AMUDP ends them at once).  Under ramp-run, a rank
 *    that dies makes the job exit with the rank's code, or 128 + the signal's number.
 *  - A rank that does not end within 2 s of the order (its watcher thread cannot run)
 *    gets SIGTERM, then SIGKILL.
 *  - Spawners: 'L' (the default when none is given; AMUDP's is 'S'), 'S' and 'C' with
 *    AMUDP's settings under GASNET_ / AMUDP_ names (README: "AMUDP and GASNet names"),
 *    or the program's own spawn function, which the master calls with the workers'
 *    argv and extra_env.  'S' gives OpenSSH -o StrictHostKeyChecking=no -o BatchMode=yes
 *    and sends the job's secrets on the ssh client's standard input; 'C' puts them in
 *    %C (visible on the custom command's command line).  Workers that 'C' or a spawn
 *    function start get their ranks in the order they connect.
 *  - AMUDP_SPMDSetProc is not supported: it only prints a warning (the rank comes from
 *    the launcher).
 *  - AMUDP_SPMDStartup_AMUDP_{DEBUG,NDEBUG} (AMUDP's link names) are both
 *    ramp_SPMDStartup; the spawner function type takes AMUDP 3.16's extra_env.
 */
#ifndef RAMP_AMUDP_SPMD_H
#define RAMP_AMUDP_SPMD_H

#include "amudp.h"
#include "ramp_spmd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Spawner: starts nproc workers; returns non-zero on success. */
typedef ramp_spawnfn_t amudp_spawnfn_t;
/* Exit callback, run with the exit code. */
typedef ramp_exitcallback_t amudp_exitcallback_t;
/* { letter, description, spawner } entry of AMUDP_Spawnfn_Desc. */
typedef ramp_spawnfn_desc_t amudp_spawnfn_desc_t;

/* AMUDP's SPMD entry points: real symbols of libramp.so (each the ramp_SPMD* function
 * or object of the same meaning; see <ramp_spmd.h> for what each does). */
int AMUDP_SPMDStartup_AMUDP_DEBUG(int *argc, char ***argv, int nproc, int networkdepth,
                                  amudp_spawnfn_t spawnfn, uint64_t *networkpid,
                                  eb_t *eb, ep_t *ep);
int AMUDP_SPMDStartup_AMUDP_NDEBUG(int *argc, char ***argv, int nproc, int networkdepth,
                                   amudp_spawnfn_t spawnfn, uint64_t *networkpid,
                                   eb_t *eb, ep_t *ep);
int AMUDP_SPMDExit(int exitcode);
int AMUDP_SPMDSetExitCallback(amudp_exitcallback_t fp);
/* The object ramp_SPMDkillmyprocess itself. */
extern void (*AMUDP_SPMDkillmyprocess)(int);
int AMUDP_SPMDIsWorker(char **argv);
int AMUDP_SPMDNumProcs(void);
int AMUDP_SPMDMyProc(void);
int AMUDP_SPMDBarrier(void);
int AMUDP_SPMDAllGather(void *source, void *dest, size_t len);
const char *AMUDP_SPMDgetenvMaster(const char *keyname);
/* The spawners (pass them to AMUDP_SPMDStartup; never call them) and their table: the
 * object ramp_Spawnfn_Desc itself. */
int AMUDP_SPMDLocalSpawn(int nproc, int argc, char **argv, char **extra_env);
int AMUDP_SPMDSshSpawn(int nproc, int argc, char **argv, char **extra_env);
int AMUDP_SPMDCustomSpawn(int nproc, int argc, char **argv, char **extra_env);
extern const amudp_spawnfn_desc_t AMUDP_Spawnfn_Desc[];

/* Not supported by ramp (the rank comes from the launcher): prints a warning on stderr
 * and does nothing. */
void ramp_amudp_SPMDSetProc(int rank);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* AMUDP's spelling of the start-up call: the link name of the build mode. */
#define AMUDP_SPMDStartup AMX_CONCAT(AMUDP_SPMDStartup_AMUDP, AMUDP_DEBUG_CONFIG)
#define AMUDP_check_env_prefix       ramp_check_env_prefix
#define AMUDP_SPMDSetProc            ramp_amudp_SPMDSetProc

/* ------------------------------------------------------------------------------------
 * AMX names
 * ---------------------------------------------------------------------------------- */

#define AMX_SPMDgetenvMaster    AMUDP_SPMDgetenvMaster
#define AMX_SPMDBarrier         AMUDP_SPMDBarrier
#define AMX_SPMDNumProcs        AMUDP_SPMDNumProcs
#define AMX_SPMDMyProc          AMUDP_SPMDMyProc
#define AMX_SPMDExit            AMUDP_SPMDExit
#define AMX_SPMDSetExitCallback AMUDP_SPMDSetExitCallback
#define AMX_SPMDkillmyprocess   AMUDP_SPMDkillmyprocess
#define AMX_SPMDIsWorker        AMUDP_SPMDIsWorker
#define AMX_SPMDAllGather       AMUDP_SPMDAllGather
/* nproc and the spawner come from the command line or the environment */
#define AMX_SPMDStartup(pargc, pargv, networkdepth, pnetworkpid, peb, pep) \
  AMUDP_SPMDStartup((pargc), (pargv), 0, (networkdepth), NULL, (pnetworkpid), (peb), (pep))

#endif /* RAMP_AMUDP_SPMD_H */
