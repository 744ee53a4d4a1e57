/*
 * testgetput -- AMX_SPMDAllGather of a pointer from every rank, then synchronous
 * putWord/getWord to every rank, itself included (loopback), with barriers between the
 * phases; every value is verified.  Usage: testgetput iters
 */
#include "apputils.h"

static uint32_t value(int iter, int writer, int owner) {
  /* high bit set: negative as int32_t, all 32 bits must survive */
  return 0x80000000u | ((uint32_t)(iter & 0x7fff) << 16) | ((uint32_t)writer << 8) |
         (uint32_t)owner;
}

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  uint64_t networkpid;
  int myproc, numprocs, iters, i, p, q;
  uint32_t *vals;       /* vals[q]: written by rank q */
  uint32_t **ptrs;      /* every rank's vals */
  double t0, t1;

  TEST_STARTUP(argc, argv, networkpid, eb, ep, 1, 1, "iterations");
  myproc = AMX_SPMDMyProc();
  numprocs = AMX_SPMDNumProcs();
  iters = atoi(argv[1]);
  if (iters < 1) iters = 1;
  if (numprocs > 255) {
    if (myproc == 0) fprintf(stderr, "testgetput: at most 255 processes\n");
    AMX_SPMDExit(1);
  }

  setupUtilHandlers(ep, eb);

  vals = (uint32_t *)calloc((size_t)numprocs, sizeof(uint32_t));
  ptrs = (uint32_t **)calloc((size_t)numprocs, sizeof(uint32_t *));
  APP_CHECK(vals && ptrs, "out of memory");
  AM_Safe(AMX_SPMDAllGather(&vals, ptrs, sizeof(uint32_t *)));
  APP_CHECK(ptrs[myproc] == vals, "AllGather: own slot %p != %p", (void *)ptrs[myproc],
            (void *)vals);

  AM_Safe(AMX_SPMDBarrier());
  t0 = getCurrentTimeSec();
  for (i = 0; i < iters; i++) {
    /* put my value into every rank's slot for me */
    for (p = 0; p < numprocs; p++) {
      int dest = (myproc + p) % numprocs;
      putWord(dest, &ptrs[dest][myproc], value(i, myproc, dest));
    }
    AM_Safe(AMX_SPMDBarrier());
    for (q = 0; q < numprocs; q++)
      APP_CHECK(vals[q] == value(i, q, myproc),
                "iteration %i: slot of node %i is 0x%08x, expected 0x%08x", i, q, vals[q],
                value(i, q, myproc));
    /* read them back from every rank */
    for (p = 0; p < numprocs; p++) {
      int dest = (myproc + p) % numprocs;
      uint32_t v = getWord(dest, &ptrs[dest][myproc]);
      APP_CHECK(v == value(i, myproc, dest),
                "iteration %i: getWord from node %i gave 0x%08x, expected 0x%08x", i, dest, v,
                value(i, myproc, dest));
    }
    AM_Safe(AMX_SPMDBarrier());
  }
  t1 = getCurrentTimeSec();

  if (myproc == 0) {
    printf("testgetput: procs=%i iters=%i round_trips_per_node=%i time=%.3f s "
           "per_round_trip_us=%.2f (including barriers)\n",
           numprocs, iters, 2 * iters * numprocs, t1 - t0,
           (t1 - t0) * 1e6 / (2.0 * iters * numprocs));
    fflush(stdout);
  }

  AM_Safe(AMX_SPMDBarrier());
  printGlobalStats();
  AM_Safe(AMX_SPMDBarrier());
  AMX_SPMDExit(0);
  return 0;
}
