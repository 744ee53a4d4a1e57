/*
 * ping.c -- the C twin of python/examples/ping.py: same handlers, same protocol,
 * same output, to compare C and Python round trips (and to mix them in one job).
 *
 *   cc -O2 -std=c11 ping.c -I include -L target/release -lramp -Wl,-rpath,$PWD/target/release -o ping_c
 *   ramp-run -n 4 ./ping_c [--iters N] [--warmup N] [--size BYTES]
 *
 * Rank 0 pings every other rank in turn (short request, replied at once) and prints
 * the median round trip per peer; with --size B also medium round trips of B bytes.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ramp_spmd.h"

#define H_PING 1
#define H_PONG 2
#define H_PING_M 3
#define H_PONG_M 4
#define H_STOP 5

static volatile int stop_flag = 0;
static volatile long pongs = 0;
static volatile long served = 0; /* requests handled by this rank */

static void ok(int rc, const char *what) {
  if (rc != AM_OK) {
    fprintf(stderr, "ping_c: %s failed: %s\n", what, ramp_ErrorName(rc));
    exit(1);
  }
}

static void on_ping(void *token, int32_t seq) {
  served++;
  ok(AM_Reply1(token, H_PONG, seq), "AM_Reply1");
}
static void on_pong(void *token, int32_t seq) { (void)token; (void)seq; pongs++; }
static void on_ping_m(void *token, void *buf, size_t n, int32_t seq) {
  served++;
  ok(AM_ReplyI1(token, H_PONG_M, buf, n, seq), "AM_ReplyI1");
}
static void on_pong_m(void *token, void *buf, size_t n, int32_t seq) {
  (void)token; (void)buf; (void)n; (void)seq; pongs++;
}
static void on_stop(void *token) { (void)token; stop_flag = 1; }

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(const double *s, int n) {
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  ok(ramp_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep), "ramp_SPMDStartup");
  int iters = 5000, warmup = 500, size = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--size") && i + 1 < argc) size = atoi(argv[++i]);
    else { fprintf(stderr, "usage: ping_c [--iters N] [--warmup N] [--size BYTES]\n"); return 2; }
  }
  int rank = ramp_SPMDMyProc(), nproc = ramp_SPMDNumProcs();
  ok(AM_SetHandler(ep, H_PING, on_ping), "AM_SetHandler");
  ok(AM_SetHandler(ep, H_PONG, on_pong), "AM_SetHandler");
  ok(AM_SetHandler(ep, H_PING_M, on_ping_m), "AM_SetHandler");
  ok(AM_SetHandler(ep, H_PONG_M, on_pong_m), "AM_SetHandler");
  ok(AM_SetHandler(ep, H_STOP, on_stop), "AM_SetHandler");
  ok(ramp_SPMDBarrier(), "ramp_SPMDBarrier");

  if (rank != 0) {
    /* serve: spin while busy, block in AM_WaitSema after 0.5 ms of silence (as ping.py) */
    double idle_since = now_us();
    long seen = served;
    while (!stop_flag) {
      ok(AM_Poll(eb), "AM_Poll");
      /* the stop handler runs inside AM_Poll: look at its flag before blocking, or
       * AM_WaitSema waits for a message that never comes */
      if (stop_flag) break;
      if (served != seen) { /* progress: keep spinning */
        seen = served;
        idle_since = now_us();
      } else if (now_us() - idle_since > 500) {
        ok(AM_SetEventMask(eb, AM_NOTEMPTY), "AM_SetEventMask");
        ok(AM_WaitSema(eb), "AM_WaitSema");
        idle_since = now_us();
      }
    }
    ok(ramp_SPMDBarrier(), "ramp_SPMDBarrier");
    return 0;
  }

  char *payload = malloc(size > 0 ? size : 1);
  for (int i = 0; i < size; i++) payload[i] = (char)i;
  double *samples = malloc(sizeof(double) * (iters > 0 ? iters : 1));
  double medians[1024];
  int nmed = 0;
  printf("ping: c, %d rank(s), %d round trips per peer after %d warm-up", nproc, iters, warmup);
  if (size) printf(", medium %d bytes", size);
  printf("\n");
  int first = nproc > 1 ? 1 : 0;
  for (int peer = first; peer < (nproc > 1 ? nproc : 1); peer++) {
    for (int kind = 0; kind < (size ? 2 : 1); kind++) {
      for (int i = 0; i < warmup + iters; i++) {
        long want = pongs + 1;
        double t0 = now_us();
        if (kind == 0) ok(AM_Request1(ep, peer, H_PING, i), "AM_Request1");
        else ok(AM_RequestI1(ep, peer, H_PING_M, payload, size, i), "AM_RequestI1");
        while (pongs < want) ok(AM_Poll(eb), "AM_Poll");
        double t1 = now_us();
        if (i >= warmup) samples[i - warmup] = t1 - t0;
      }
      qsort(samples, iters, sizeof(double), cmp);
      double med = median(samples, iters);
      if (kind == 0 && nmed < 1024) medians[nmed++] = med;
      printf("ping: rank 0 -> rank %d %-6s round trip: median %8.2f us  p10 %8.2f  p90 %8.2f  min %8.2f\n",
             peer, kind ? "medium" : "short", med, samples[iters / 10], samples[(9 * iters) / 10],
             samples[0]);
    }
    if (peer != 0) ok(AM_Request0(ep, peer, H_STOP), "AM_Request0");
  }
  qsort(medians, nmed, sizeof(double), cmp);
  printf("ping: c short round-trip median %.2f us (median over %d peer(s))\n", median(medians, nmed),
         nmed);
  ramp_stats_t st;
  ok(ramp_GetEndpointStatistics(ep, &st), "ramp_GetEndpointStatistics");
  printf("ping: rank 0 sent %llu short requests, %llu retransmitted packets\n",
         (unsigned long long)st.RequestsSent[0], (unsigned long long)st.PacketsRetransmitted);
  fflush(stdout);
  ok(ramp_SPMDBarrier(), "ramp_SPMDBarrier");
  free(samples);
  free(payload);
  return 0;
}
