/*
 * drain_ping.c -- ping.c's short round trip over the pull-style receive (ramp_DrainOn,
 * ramp_DrainReply1, ramp_RequestShort1: the calls the Python package makes), with no
 * handler called back: what the C library costs on the Python package's path.
 * ping_pair.sh --floor runs it beside ping.c and raw_ping.py.
 *
 *   cc -O2 -std=c11 drain_ping.c -I include -L target/release -lramp -Wl,-rpath,$PWD/target/release -o drain_ping
 *   ramp-run -n 2 ./drain_ping [--iters N] [--warmup N]
 *
 * Rank 0 pings rank 1 (handler 1, replied to handler 2 with the same value), rank 1
 * serves until handler 5 comes; the output line is ping.c's.
 *
 * The handlers are real, as they must be: a message that arrives while a rank is not
 * draining (inside ramp_SPMDBarrier, which polls) runs its handler there.  With
 * handlers that did nothing, a ping that reached rank 1 during its barrier got an
 * automatic reply instead of a pong and the job waited forever (about one run in
 * three with another process busy on a core).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ramp.h"
#include "ramp_spmd.h"

#define H_PING 1
#define H_PONG 2
#define H_STOP 5
#define BATCH 16

static void ok(int rc, const char *what) {
  if (rc != AM_OK) {
    fprintf(stderr, "drain_ping: %s returned %d\n", what, rc);
    exit(1);
  }
}
/* messages handled by a poll outside the drain (a barrier's): the same effect */
static volatile int pongs, stopped;
static void on_ping(void *token, int a) { ok(AM_Reply1(token, H_PONG, a), "AM_Reply1"); }
static void on_pong(void *token, int a) { (void)token, (void)a; pongs++; }
static void on_stop(void *token) { (void)token; stopped = 1; }
static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  ok(ramp_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep), "ramp_SPMDStartup");
  int iters = 5000, warmup = 500;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--warmup")) warmup = atoi(argv[i + 1]);
  }
  if (iters < 1 || warmup < 0 || ramp_SPMDNumProcs() != 2) {
    fprintf(stderr, "drain_ping: 2 ranks, --iters >= 1, --warmup >= 0\n");
    return 2;
  }
  /* drained messages never call these; a poll outside the drain does (see above) */
  ok(AM_SetHandler(ep, H_PING, (am_handler_fn_t)on_ping), "AM_SetHandler");
  ok(AM_SetHandler(ep, H_PONG, (am_handler_fn_t)on_pong), "AM_SetHandler");
  ok(AM_SetHandler(ep, H_STOP, (am_handler_fn_t)on_stop), "AM_SetHandler");
  ok(ramp_SPMDBarrier(), "ramp_SPMDBarrier");
  ramp_msg_t m[BATCH];
  ramp_drain_t d = {eb, m, BATCH, 0, 100, 0}; /* spin 100 us a call, as Python's */
  int n;
  if (ramp_SPMDMyProc() != 0) {
    for (int stop = 0; !stop && !stopped;) {
      if ((n = ramp_DrainOn(&d)) < 0) ok(-n, "ramp_DrainOn");
      for (int i = 0; i < n; i++) {
        if (m[i].handler == H_PING) ok(ramp_DrainReply1(i, H_PONG, m[i].args[0]), "ramp_DrainReply1");
        else if (m[i].handler == H_STOP) stop = 1;
      }
    }
    ok(ramp_DrainRelease(), "ramp_DrainRelease");
    ok(ramp_SPMDBarrier(), "ramp_SPMDBarrier");
    ramp_SPMDExit(0);
  }
  double *s = malloc(sizeof *s * (size_t)iters);
  if (!s) return 1;
  for (int i = 0; i < warmup + iters; i++) {
    int seen = pongs; /* a send may poll: taken before it */
    double t0 = now_us();
    ok(ramp_RequestShort1(ep, 1, H_PING, i), "ramp_RequestShort1");
    for (int got = 0; !got && pongs == seen;) {
      if ((n = ramp_DrainOn(&d)) < 0) ok(-n, "ramp_DrainOn");
      for (int j = 0; j < n; j++) got |= m[j].handler == H_PONG;
    }
    double t1 = now_us();
    if (i >= warmup) s[i - warmup] = t1 - t0;
  }
  ok(ramp_DrainRelease(), "ramp_DrainRelease");
  ok(AM_Request0(ep, 1, H_STOP), "AM_Request0");
  qsort(s, (size_t)iters, sizeof *s, cmp);
  double med = iters % 2 ? s[iters / 2] : (s[iters / 2 - 1] + s[iters / 2]) / 2;
  printf("ping: c-drain short round-trip median %.2f us\n", med);
  free(s);
  ok(ramp_SPMDBarrier(), "ramp_SPMDBarrier");
  ramp_SPMDExit(0);
  return 0;
}
