/*
 * testreduce -- every rank sends AM_Request1(ep, 0, 1, myproc) to rank 0 (rank 0 to
 * itself: loopback); the handler does not reply (the library replies automatically);
 * rank 0 waits with AM_SetEventMask / AM_WaitSema / AM_Poll until it has numprocs calls,
 * then checks the sum.
 * Usage: testreduce [exitrank [exit|fatal|kill]]   -- with exitrank, that rank calls
 * AMX_SPMDExit(3) (or AMX_FatalErr with "fatal", or raise(SIGKILL) with "kill") right
 * after start-up, to check that the launcher reports a failing job.
 */
#include "apputils.h"

#include <signal.h>

#define REDUCE_HANDLER 1

static volatile int calls = 0;
static volatile int64_t sum = 0;
static volatile uint32_t seen_mask = 0;

static void reduce_handler(void *token, int32_t val) {
  int src = -1;
  AM_Safe(AMX_GetSourceId(token, &src));
  if (src != val) AMX_FatalErr("testreduce: value %i from source %i", (int)val, src);
  if (val < 32) {
    if (seen_mask & (1u << val)) AMX_FatalErr("testreduce: node %i counted twice", (int)val);
    seen_mask |= 1u << val;
  }
  sum += val;
  calls++;
  /* no reply */
}

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  uint64_t networkpid;
  int myproc, numprocs;

  TEST_STARTUP(argc, argv, networkpid, eb, ep, 0, 2, "[exitrank [exit|fatal|kill]]");
  myproc = AMX_SPMDMyProc();
  numprocs = AMX_SPMDNumProcs();

  if (argc > 1 && atoi(argv[1]) == myproc) {
    if (argc > 2 && strcmp(argv[2], "fatal") == 0)
      AMX_FatalErr("testreduce: node %i calls AMX_FatalErr on request", myproc);
    if (argc > 2 && strcmp(argv[2], "kill") == 0) {
      fprintf(stderr, "testreduce: node %i kills itself with SIGKILL on request\n", myproc);
      fflush(stderr);
      raise(SIGKILL);
    }
    fprintf(stderr, "testreduce: node %i exits with code 3 on request\n", myproc);
    fflush(stderr);
    AMX_SPMDExit(3);
  }

  setupUtilHandlers(ep, eb);
  AM_Safe(AM_SetHandler(ep, REDUCE_HANDLER, reduce_handler));
  AM_Safe(AMX_SPMDBarrier());

  AM_Safe(AM_Request1(ep, 0, REDUCE_HANDLER, myproc));

  if (myproc == 0) {
    int64_t expect = (int64_t)numprocs * (numprocs - 1) / 2;
    while (calls < numprocs) {
      AM_Safe(AM_SetEventMask(eb, AM_NOTEMPTY));
      AM_Safe(AM_WaitSema(eb));
      AM_Safe(AM_Poll(eb));
    }
    APP_CHECK(calls == numprocs, "%i calls, expected %i", calls, numprocs);
    APP_CHECK(sum == expect, "sum %lld, expected %lld", (long long)sum, (long long)expect);
    printf("testreduce: procs=%i calls=%i sum=%lld (expected %lld) OK\n", numprocs, calls,
           (long long)sum, (long long)expect);
    fflush(stdout);
  }

  AM_Safe(AMX_SPMDBarrier());
  APP_CHECK(calls == (myproc == 0 ? numprocs : 0), "node %i: %i calls after the barrier",
            myproc, calls);
  printGlobalStats();
  AM_Safe(AMX_SPMDBarrier());
  AMX_SPMDExit(0);
  return 0;
}
