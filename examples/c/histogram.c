/*
 * histogram -- an SPMD job in C: a distributed histogram.
 *
 *     cc histogram.c $(pkg-config --cflags --libs ramp) -o histogram
 *     ramp-run -n 4 ./histogram [values-per-rank]
 *
 * (also unchanged under mpiexec -n 4, srun --mpi=pmi2 -n 4, mpirun -n 4, ./histogram 4 L)
 *
 * Bucket b of BUCKETS belongs to rank b % nproc.  Every rank draws its values and
 * sends each one's bucket to the bucket's owner with a short request; the owner's
 * handler counts it.  Then one ramp_SPMDBarrier(): it returns only after every request
 * this rank sent has run at its target, so each rank's counts are complete right after
 * it (no counting protocol of our own).  An all-gather brings the counts to every rank;
 * rank 0 prints the histogram and checks that nothing was lost or counted twice.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ramp_spmd.h" /* includes am.h and ramp.h */

#define BUCKETS 16
#define H_COUNT 1 /* request handler: one value fell into bucket args[0] */

static int64_t counts[BUCKETS]; /* this rank's buckets (only b % nproc == rank are used) */

static void on_count(void *token, int32_t bucket) {
  (void)token;
  if (bucket >= 0 && bucket < BUCKETS) counts[bucket]++;
}

static void die(int rc, const char *what) {
  if (rc != AM_OK) {
    /* ramp_LastError() says why, in words */
    fprintf(stderr, "histogram: %s: %s (%s)\n", what, ramp_ErrorName(rc), ramp_LastError());
    exit(1);
  }
}

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  die(ramp_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep), "ramp_SPMDStartup");
  int rank = ramp_SPMDMyProc(), nproc = ramp_SPMDNumProcs();
  long per_rank = argc > 1 ? atol(argv[1]) : 100000;
  die(AM_SetHandler(ep, H_COUNT, on_count), "AM_SetHandler");
  die(ramp_SPMDBarrier(), "ramp_SPMDBarrier"); /* every rank has its handler */

  uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(rank + 1); /* xorshift: values per rank */
  for (long i = 0; i < per_rank; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int bucket = (int)((x >> 11) % BUCKETS);
    /* a request to ourselves runs its handler at once (loopback) */
    die(AM_Request1(ep, (uint32_t)(bucket % nproc), H_COUNT, bucket), "AM_Request1");
  }
  die(ramp_SPMDBarrier(), "ramp_SPMDBarrier"); /* every request has been counted */

  int64_t *all = calloc((size_t)nproc * BUCKETS, sizeof *all);
  if (!all) return 1;
  die(ramp_SPMDAllGather(counts, all, sizeof counts), "ramp_SPMDAllGather");
  if (rank == 0) {
    int64_t total = 0;
    printf("histogram: %d ranks x %ld values into %d buckets\n", nproc, per_rank, BUCKETS);
    for (int b = 0; b < BUCKETS; b++) {
      int64_t c = all[(b % nproc) * BUCKETS + b];
      total += c;
      printf("  bucket %2d (rank %d): %8lld\n", b, b % nproc, (long long)c);
    }
    int64_t want = (int64_t)nproc * per_rank;
    printf("histogram: total %lld of %lld: %s\n", (long long)total, (long long)want,
           total == want ? "OK" : "MISMATCH");
    free(all);
    ramp_SPMDExit(total == want ? 0 : 1);
  }
  free(all);
  ramp_SPMDExit(0);
  return 0;
}
