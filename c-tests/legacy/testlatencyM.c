/*
 * testlatencyM -- like testlatency, but the request is a medium message of msgsize bytes:
 * AM_RequestI0(ep, 0, h, msg, msgsize); the handler (declared with int nbytes) checks
 * the payload and replies with AM_Reply0.  Usage: testlatencyM iters [P|B] [msgsize=1]
 */
#include "apputils.h"

#define PING_REQ_HANDLER 1
#define PING_REP_HANDLER 2

static volatile int numreq = 0;
static volatile int numrep = 0;
static int msgsize = 1;

static unsigned char pattern(int sender, int seq, int j) {
  return (unsigned char)((sender * 37 + seq * 11 + j * 3 + 1) & 0xff);
}

/* seq: which of the sender's requests this is; rank 0 keeps one count per sender */
static int *rxcount;

static void ping_request_handler(void *token, void *buf, int nbytes) {
  int src = -1, j;
  const unsigned char *p = (const unsigned char *)buf;
  AM_Safe(AMX_GetSourceId(token, &src));
  if (nbytes != msgsize)
    AMX_FatalErr("testlatencyM: nbytes %i != msgsize %i (from %i)", nbytes, msgsize, src);
  if (((uintptr_t)buf) % 8) AMX_FatalErr("testlatencyM: medium buffer %p not aligned", buf);
  if (src < 0 || src >= AMX_SPMDNumProcs()) AMX_FatalErr("testlatencyM: bad source %i", src);
  for (j = 0; j < nbytes; j++) {
    if (p[j] != pattern(src, rxcount[src], j))
      AMX_FatalErr("testlatencyM: byte %i of request %i from %i is 0x%02x, expected 0x%02x",
                   j, rxcount[src], src, p[j], pattern(src, rxcount[src], j));
  }
  rxcount[src]++;
  numreq++;
  AM_Safe(AM_Reply0(token, PING_REP_HANDLER));
}

static void ping_reply_handler(void *token) {
  (void)token;
  numrep++;
}

typedef struct { double median_us, mean_us; int samples; int pad; } lat_t;

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  uint64_t networkpid;
  int myproc, numprocs, iters, polling = 1, sender, expect_req, i, j;
  double *rtt;
  unsigned char *msg;
  lat_t mine, *all;

  TEST_STARTUP(argc, argv, networkpid, eb, ep, 1, 3, "iterations [P|B] [msgsize]");
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
      if (myproc == 0) fprintf(stderr, "testlatencyM: mode must be P or B, not %s\n", argv[2]);
      AMX_SPMDExit(1);
    }
  }
  if (argc > 3) msgsize = atoi(argv[3]);
  if (msgsize < 0 || msgsize > AM_MaxMedium()) {
    if (myproc == 0)
      fprintf(stderr, "testlatencyM: msgsize must be 0..%i\n", (int)AM_MaxMedium());
    AMX_SPMDExit(1);
  }
  sender = (myproc != 0 || numprocs == 1);
  expect_req = (numprocs == 1) ? iters : iters * (numprocs - 1);
  rtt = (double *)calloc((size_t)iters, sizeof(double));
  all = (lat_t *)calloc((size_t)numprocs, sizeof(lat_t));
  rxcount = (int *)calloc((size_t)numprocs, sizeof(int));
  msg = (unsigned char *)malloc((size_t)msgsize + 1);
  APP_CHECK(rtt && all && rxcount && msg, "out of memory");

  outputTimerStats();
  AM_Safe(AMX_SPMDBarrier());

  memset(&mine, 0, sizeof(mine));
  if (sender) {
    double sum = 0;
    for (i = 0; i < iters; i++) {
      double t0, t1;
      int want = i + 1;
      for (j = 0; j < msgsize; j++) msg[j] = pattern(myproc, i, j);
      t0 = getCurrentTimeSec();
      AM_Safe(AM_RequestI0(ep, 0, PING_REQ_HANDLER, msg, (size_t)msgsize));
      memset(msg, 0xEE, (size_t)msgsize); /* the source buffer is ours again */
      while (numrep < want) {
        if (polling) AM_Safe(AM_Poll(eb));
        else AM_PollBlock(eb);
      }
      t1 = getCurrentTimeSec();
      rtt[i] = (t1 - t0) * 1e6;
      sum += rtt[i];
    }
    mine.mean_us = sum / iters;
    mine.samples = iters;
    mine.median_us = apputil_median(rtt, iters);
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
    double meds[numprocs], wsum = 0;
    int n = 0, samples = 0;
    for (i = 0; i < numprocs; i++) {
      if (!all[i].samples) continue;
      meds[n++] = all[i].median_us;
      wsum += all[i].mean_us * all[i].samples;
      samples += all[i].samples;
    }
    APP_CHECK(samples == expect_req, "gathered %i samples, expected %i", samples, expect_req);
    printf("testlatencyM: procs=%i iters=%i mode=%s msgsize=%i senders=%i rtt_median_us=%.2f "
           "rtt_mean_us=%.2f\n",
           numprocs, iters, polling ? "P" : "B", msgsize, n, apputil_median(meds, n),
           wsum / samples);
    fflush(stdout);
  }

  AM_Safe(AMX_SPMDBarrier());
  printGlobalStats();
  AM_Safe(AMX_SPMDBarrier());
  AMX_SPMDExit(0);
  return 0;
}
