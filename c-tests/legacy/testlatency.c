/*
 * testlatency -- ping-pong with rank 0: AM_Request0 / AM_Reply0, one outstanding at a
 * time, from every rank but 0 (with one process, rank 0 to itself).  Rank 0 prints the
 * median and mean round-trip time.  Usage: testlatency iters [P|B]
 */
#include "apputils.h"

#define PING_REQ_HANDLER 1
#define PING_REP_HANDLER 2

static volatile int numreq = 0;
static volatile int numrep = 0;

static void ping_request_handler(void *token) {
  numreq++;
  AM_Safe(AM_Reply0(token, PING_REP_HANDLER));
}

static void ping_reply_handler(void *token) {
  (void)token;
  numrep++;
}

typedef struct { double median_us, mean_us, min_us, max_us; int samples; int pad; } lat_t;

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  uint64_t networkpid;
  int myproc, numprocs, iters, polling = 1, sender, expect_req, i;
  double *rtt;
  lat_t mine, *all;

  TEST_STARTUP(argc, argv, networkpid, eb, ep, 1, 2, "iterations [P|B]");
  myproc = AMX_SPMDMyProc();
  numprocs = AMX_SPMDNumProcs();

  setupUtilHandlers(ep, eb);
  AM_Safe(AM_SetHandler(ep, PING_REQ_HANDLER, ping_request_handler));
  AM_Safe(AM_SetHandler(ep, PING_REP_HANDLER, ping_reply_handler));

  iters = atoi(argv[1]);
  if (iters < 1) iters = 1;
  if (argc > 2) {
    if (argv[2][0] == 'B' || argv[2][0] == 'b') polling = 0;
    else if (argv[2][0] != 'P' && argv[2][0] != 'p') {
      if (myproc == 0) fprintf(stderr, "testlatency: mode must be P or B, not %s\n", argv[2]);
      AMX_SPMDExit(1);
    }
  }
  sender = (myproc != 0 || numprocs == 1);
  expect_req = (numprocs == 1) ? iters : iters * (numprocs - 1);
  rtt = (double *)calloc((size_t)iters, sizeof(double));
  all = (lat_t *)calloc((size_t)numprocs, sizeof(lat_t));
  APP_CHECK(rtt && all, "out of memory");

  outputTimerStats();
  AM_Safe(AMX_SPMDBarrier());

  memset(&mine, 0, sizeof(mine));
  if (sender) {
    double sum = 0;
    for (i = 0; i < iters; i++) {
      double t0 = getCurrentTimeSec(), t1;
      int want = i + 1;
      AM_Safe(AM_Request0(ep, 0, PING_REQ_HANDLER));
      while (numrep < want) {
        if (polling) AM_Safe(AM_Poll(eb));
        else AM_PollBlock(eb);
      }
      t1 = getCurrentTimeSec();
      APP_CHECK(numrep == want, "node %i: %i replies after request %i", myproc, numrep, want);
      rtt[i] = (t1 - t0) * 1e6;
      sum += rtt[i];
    }
    mine.mean_us = sum / iters;
    mine.samples = iters;
    mine.median_us = apputil_median(rtt, iters); /* sorts rtt */
    mine.min_us = rtt[0];
    mine.max_us = rtt[iters - 1];
  }
  if (myproc == 0) {
    while (numreq < expect_req) {
      if (polling) AM_Safe(AM_Poll(eb));
      else AM_PollBlock(eb);
    }
  }
  APP_CHECK(numrep == (sender ? iters : 0), "node %i got %i replies, expected %i", myproc,
            numrep, sender ? iters : 0);
  APP_CHECK(numreq == (myproc == 0 ? expect_req : 0), "node %i got %i requests, expected %i",
            myproc, numreq, myproc == 0 ? expect_req : 0);

  AM_Safe(AMX_SPMDAllGather(&mine, all, sizeof(lat_t)));
  if (myproc == 0) {
    double meds[numprocs], wsum = 0, mn = 1e30, mx = 0;
    int n = 0, samples = 0;
    for (i = 0; i < numprocs; i++) {
      if (!all[i].samples) continue;
      meds[n++] = all[i].median_us;
      wsum += all[i].mean_us * all[i].samples;
      samples += all[i].samples;
      if (all[i].min_us < mn) mn = all[i].min_us;
      if (all[i].max_us > mx) mx = all[i].max_us;
    }
    APP_CHECK(samples == expect_req, "gathered %i samples, expected %i", samples, expect_req);
    printf("testlatency: procs=%i iters=%i mode=%s senders=%i rtt_median_us=%.2f "
           "rtt_mean_us=%.2f rtt_min_us=%.2f rtt_max_us=%.2f\n",
           numprocs, iters, polling ? "P" : "B", n, apputil_median(meds, n),
           wsum / samples, mn, mx);
    fflush(stdout);
  }

  AM_Safe(AMX_SPMDBarrier());
  printGlobalStats();
  AM_Safe(AMX_SPMDBarrier());
  AMX_SPMDExit(0);
  return 0;
}
