/*
 * testreadwrite -- pipelined remote memory: 255 writeWord requests to the left
 * neighbour and then 255 readWord requests to the right neighbour without waiting (the
 * library has to throttle on credits), then writeSync/readSync and verification; then
 * the same one word at a time (synchronous versions).  Usage: testreadwrite iters
 */
#include "apputils.h"

#define NWORDS 255

static uint32_t wval(int iter, int writer, int k) {
  return 0x90000000u ^ ((uint32_t)iter * 0x10001u) ^ ((uint32_t)writer << 20) ^
         ((uint32_t)k * 0x01010101u);
}
static uint32_t rval(int iter, int owner, int k) {
  return 0xC0000000u ^ ((uint32_t)iter * 0x30003u) ^ ((uint32_t)owner << 12) ^ (uint32_t)k;
}

struct area {
  uint32_t written[NWORDS];  /* written by the right neighbour */
  uint32_t readme[NWORDS];   /* read by the left neighbour */
};

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  uint64_t networkpid;
  int myproc, numprocs, iters, i, k, left, right, phase;
  struct area *mine, **areas;
  uint32_t *got;
  double t0, t1;

  TEST_STARTUP(argc, argv, networkpid, eb, ep, 1, 1, "iterations");
  myproc = AMX_SPMDMyProc();
  numprocs = AMX_SPMDNumProcs();
  iters = atoi(argv[1]);
  if (iters < 1) iters = 1;
  left = (myproc + numprocs - 1) % numprocs;
  right = (myproc + 1) % numprocs;

  setupUtilHandlers(ep, eb);

  mine = (struct area *)calloc(1, sizeof(struct area));
  areas = (struct area **)calloc((size_t)numprocs, sizeof(struct area *));
  got = (uint32_t *)calloc(NWORDS, sizeof(uint32_t));
  APP_CHECK(mine && areas && got, "out of memory");
  AM_Safe(AMX_SPMDAllGather(&mine, areas, sizeof(struct area *)));

  AM_Safe(AMX_SPMDBarrier());
  t0 = getCurrentTimeSec();
  for (i = 0; i < iters; i++) {
    for (phase = 0; phase < 2; phase++) {
      int it = 2 * i + phase;
      for (k = 0; k < NWORDS; k++) {
        mine->readme[k] = rval(it, myproc, k);
        mine->written[k] = 0;
      }
      memset(got, 0, NWORDS * sizeof(uint32_t));
      AM_Safe(AMX_SPMDBarrier());
      if (phase == 0) {
        /* pipelined: everything outstanding at once */
        for (k = 0; k < NWORDS; k++) writeWord(left, &areas[left]->written[k], wval(it, myproc, k));
        for (k = 0; k < NWORDS; k++) readWord(&got[k], right, &areas[right]->readme[k]);
        writeSync();
        readSync();
      } else {
        /* synchronous versions */
        for (k = 0; k < NWORDS; k++) {
          writeWord(left, &areas[left]->written[k], wval(it, myproc, k));
          writeSync();
          readWord(&got[k], right, &areas[right]->readme[k]);
          readSync();
        }
      }
      for (k = 0; k < NWORDS; k++)
        APP_CHECK(got[k] == rval(it, right, k),
                  "%s pass %i: readWord %i from node %i gave 0x%08x, expected 0x%08x",
                  phase ? "sync" : "pipelined", i, k, right, got[k], rval(it, right, k));
      AM_Safe(AMX_SPMDBarrier());
      for (k = 0; k < NWORDS; k++)
        APP_CHECK(mine->written[k] == wval(it, right, k),
                  "%s pass %i: word %i written by node %i is 0x%08x, expected 0x%08x",
                  phase ? "sync" : "pipelined", i, k, right, mine->written[k],
                  wval(it, right, k));
      AM_Safe(AMX_SPMDBarrier());
    }
  }
  t1 = getCurrentTimeSec();

  if (myproc == 0) {
    printf("testreadwrite: procs=%i iters=%i words_per_pass=%i time=%.3f s "
           "per_word_us=%.2f (pipelined and synchronous passes, including barriers)\n",
           numprocs, iters, NWORDS, t1 - t0, (t1 - t0) * 1e6 / (4.0 * NWORDS * iters));
    fflush(stdout);
  }

  AM_Safe(AMX_SPMDBarrier());
  printGlobalStats();
  AM_Safe(AMX_SPMDBarrier());
  AMX_SPMDExit(0);
  return 0;
}
