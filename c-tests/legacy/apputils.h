/*
 * apputils.h -- utilities shared by the AMX test ports (c-tests/legacy), written the way
 * an AMUDP user writes them: only <amudp.h> / <amudp_spmd.h> names (AM-2, AMUDP_*, AMX_*).
 *
 *   TEST_STARTUP(argc, argv, networkpid, eb, ep, minargs, maxargs, usage)
 *       AMX_VerboseErrors = 1; argument-count check on the AMUDP master (which also
 *       takes the LEADING_ARGS "numprocs [spawnfn]"); AMX_SPMDStartup; argument-count
 *       check again on every worker.  After it, argv holds only the program's own
 *       arguments whatever the launcher (ramp-run / mpiexec / `prog N L args`).
 *   AM_Safe(call)        any result but AM_OK: message, AMX_SPMDExit(-1), AMX_FatalErr
 *   AM_PollBlock(eb)     SetEventMask(AM_NOTEMPTY), WaitSema, Poll
 *   setupUtilHandlers(ep, eb)  handlers APPUTIL_HANDLER_BASE+0..8 (225..233), signals
 *   printGlobalStats()   statistics of every rank aggregated and dumped by rank 0
 *   getWord/putWord      synchronous remote 32-bit read/write (blocking with AM_PollBlock)
 *   readWord/writeWord   asynchronous versions; readSync/writeSync wait for all of them
 */
#ifndef APPUTILS_H
#define APPUTILS_H

#if defined(AMUDP)
  #include "amudp.h"
  #include "amudp_spmd.h"
  /* AMUDP master form: prog numprocs [spawnfn] args... */
  #define LEADING_ARGS  2
  #define LEADING_USAGE " numprocs spawnfn"
#elif defined(AMMPI)
  #error "these ports are built for AMUDP (-DAMUDP)"
#else
  #error "define AMUDP (build with -DAMUDP)"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#if defined(AMX_DEBUG) && !defined(DEBUG)
  #define DEBUG 1
#elif defined(AMX_NDEBUG) && !defined(NDEBUG)
  #define NDEBUG 1
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define APPUTIL_HANDLER_BASE 225   /* 225 .. 233 are used by apputils */
#define APPUTIL_NUM_HANDLERS 9

/* 64-bit pointers carried as two int32_t handler arguments */
#define APPUTIL_HI(p)  ((int32_t)(uint32_t)(((uint64_t)(uintptr_t)(p)) >> 32))
#define APPUTIL_LO(p)  ((int32_t)(uint32_t)((uint64_t)(uintptr_t)(p)))
#define APPUTIL_MAKEPTR(hi, lo) \
  ((void *)(uintptr_t)((((uint64_t)(uint32_t)(hi)) << 32) | (uint64_t)(uint32_t)(lo)))

/* Name of an AM_* return code. */
const char *apputil_ErrorName(int code);

#define AM_Safe(fncall) do {                                                   \
    int _am_safe_rc = (fncall);                                                \
    if (_am_safe_rc != AM_OK) {                                                \
      fprintf(stderr, "ERROR calling: %s\n at: %s:%i\n error: %s (%i)\n",      \
              #fncall, __FILE__, __LINE__, apputil_ErrorName(_am_safe_rc),     \
              _am_safe_rc);                                                    \
      fflush(stderr);                                                          \
      AMX_SPMDExit(-1);                                                        \
      AMX_FatalErr("AMX_SPMDExit failed");                                     \
    }                                                                          \
  } while (0)

/* Checks a condition of a port; on failure prints it and ends the job with exit code 1. */
#define APP_CHECK(cond, ...) do {                                              \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAILED CHECK on node %i (%s:%i): %s: ",                 \
              AMX_SPMDMyProc(), __FILE__, __LINE__, #cond);                    \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
      fflush(stderr);                                                          \
      apputil_fail();                                                          \
    }                                                                          \
  } while (0)

/* Ends the job with exit code 1 (AMX_SPMDExit(1), AMX_FatalErr if that returns). */
void apputil_fail(void);

/* Number of program arguments the master form needs before its own args: "N" and an
 * optional spawner letter (AMUDP_Spawnfn_Desc, case-insensitive). */
int apputil_leading_args(int argc, char **argv);

#define TEST_STARTUP(argc, argv, networkpid, eb, ep, minargs, maxargs, usage) do {     \
    AMX_VerboseErrors = 1;                                                           \
    if (!AMX_SPMDIsWorker(argv)) {                                                   \
      /* the AMUDP master: prog numprocs [spawnfn] args... */                        \
      int _lead = apputil_leading_args((argc), (argv));                              \
      if ((argc) < 2 || (argc) - 1 - _lead < (minargs) ||                            \
          ((maxargs) >= 0 && (argc) - 1 - _lead > (maxargs))) {                      \
        fprintf(stderr, "Usage: %s%s %s\n", (argv)[0], LEADING_USAGE, (usage));      \
        exit(1);                                                                     \
      }                                                                              \
    }                                                                                \
    AM_Safe(AMX_SPMDStartup(&(argc), &(argv), 0, &(networkpid), &(eb), &(ep)));      \
    /* a worker: argv is the program's own args, whatever the launcher */            \
    if ((argc) - 1 < (minargs) || ((maxargs) >= 0 && (argc) - 1 > (maxargs))) {      \
      if (AMX_SPMDMyProc() == 0)                                                     \
        fprintf(stderr, "Usage: %s%s %s\n", (argv)[0], LEADING_USAGE, (usage));      \
      fflush(stderr);                                                                \
      AMX_SPMDExit(1);                                                               \
    }                                                                                \
  } while (0)

/* Block until something arrives, then run handlers. */
#define AM_PollBlock(eb) do {                                                  \
    AM_Safe(AM_SetEventMask((eb), AM_NOTEMPTY));                               \
    AM_Safe(AM_WaitSema(eb));                                                  \
    AM_Safe(AM_Poll(eb));                                                      \
  } while (0)

void setupUtilHandlers(ep_t activeep, eb_t activeeb);
void printGlobalStats(void);

uint32_t getWord(int proc, void *addr);
void putWord(int proc, void *addr, uint32_t val);
void readWord(void *destaddr, int proc, void *addr);
void readSync(void);
void writeWord(int proc, void *addr, uint32_t val);
void writeSync(void);

/* Microseconds from a monotonic clock. */
int64_t getCurrentTimeMicrosec(void);
double getCurrentTimeSec(void);
/* Prints the timer's granularity and overhead (as AMX's outputTimerStats). */
void outputTimerStats(void);

/* Median of n doubles (sorts a in place). */
double apputil_median(double *a, int n);

#ifdef __cplusplus
}
#endif

#endif /* APPUTILS_H */
