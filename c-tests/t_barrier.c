/* t_barrier: "send, barrier, read" is correct.  4 ranks (the AMUDP master form, started
 * by this program itself when run without arguments: ./t_barrier 4 L) each send ROUNDS
 * short requests to every other rank, call ramp_SPMDBarrier() once, and then count the
 * requests their handlers ran: every rank must have run exactly ROUNDS * (N - 1),
 * without any polling of its own after the barrier.  The SPMD barrier returns only
 * after every request the calling rank sent before it has run at its target (ramp.h).
 * Then the barrier's cost is printed: an empty barrier, and one after a burst.
 * Meaningful under fault injection (retransmitted requests must not count twice).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ramp_spmd.h"

#define H_COUNT 7
#define ROUNDS 20000
#define NPROC "4"

static volatile long handled = 0;

static void on_count(void *token, int32_t round) {
  (void)token;
  (void)round;
  handled++;
}

static void ok(int rc, const char *what) {
  if (rc != AM_OK) {
    fprintf(stderr, "t_barrier: %s failed: %s\n", what, ramp_ErrorName(rc));
    exit(1);
  }
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
  char *master_argv[] = {argv[0], NPROC, "L", NULL};
  if (argc == 1 && !getenv("RAMP_RANK") && !getenv("PMI_FD") && !getenv("PMIX_RANK")) {
    argc = 3; /* no launcher and no arguments: be the master of a 4-rank job */
    argv = master_argv;
  }
  eb_t eb;
  ep_t ep;
  ok(ramp_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep), "ramp_SPMDStartup");
  int rank = ramp_SPMDMyProc(), n = ramp_SPMDNumProcs();
  ok(AM_SetHandler(ep, H_COUNT, on_count), "AM_SetHandler");
  ok(ramp_SPMDBarrier(), "ramp_SPMDBarrier (start)");

  for (int r = 0; r < ROUNDS; r++)
    for (int k = 1; k < n; k++) ok(AM_Request1(ep, (rank + k) % n, H_COUNT, r), "AM_Request1");
  double t0 = now_us();
  ok(ramp_SPMDBarrier(), "ramp_SPMDBarrier (after the burst)");
  double burst_us = now_us() - t0;
  long seen = handled; /* read once: no poll in between */
  long want = (long)ROUNDS * (n - 1);
  if (seen != want) {
    fprintf(stderr, "t_barrier: rank %d ran %ld requests after the barrier, expected %ld\n", rank,
            seen, want);
    ramp_SPMDExit(1);
  }

  double empty[50];
  for (int i = 0; i < 50; i++) {
    double a = now_us();
    ok(ramp_SPMDBarrier(), "ramp_SPMDBarrier (empty)");
    empty[i] = now_us() - a;
  }
  for (int i = 1; i < 50; i++) /* insertion sort: the median */
    for (int j = i; j > 0 && empty[j] < empty[j - 1]; j--) {
      double t = empty[j];
      empty[j] = empty[j - 1];
      empty[j - 1] = t;
    }
  if (rank == 0)
    printf("t_barrier: %d ranks, %d requests to each peer: all %ld ran before the barrier "
           "returned; barrier after the burst %.0f us, empty barrier median %.0f us\n",
           n, ROUNDS, want, burst_us, (empty[24] + empty[25]) / 2);
  handled = 0;
  ramp_SPMDExit(0);
  return 0;
}
