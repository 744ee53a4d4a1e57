/*
 * testping -- every rank but 0 floods AM_Request0 to rank 0 without waiting (with one
 * process, rank 0 sends to itself); handlers reply with AM_Reply0; completion is counted
 * on both sides.  Usage: testping iters [P|B]   (P: poll, B: block)
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

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  uint64_t networkpid;
  int myproc, numprocs, iters, polling = 1, sender, expect_req, i;
  double t0, t1;

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
      if (myproc == 0) fprintf(stderr, "testping: mode must be P or B, not %s\n", argv[2]);
      AMX_SPMDExit(1);
    }
  }
  sender = (myproc != 0 || numprocs == 1);
  expect_req = (numprocs == 1) ? iters : iters * (numprocs - 1);

  AM_Safe(AMX_SPMDBarrier());
  t0 = getCurrentTimeSec();

  if (sender) {
    for (i = 0; i < iters; i++) {
      AM_Safe(AM_Request0(ep, 0, PING_REQ_HANDLER));
      if (polling) AM_Safe(AM_Poll(eb));
    }
    while (numrep < iters) {
      if (polling) AM_Safe(AM_Poll(eb));
      else AM_PollBlock(eb);
    }
  }
  if (myproc == 0) {
    while (numreq < expect_req) {
      if (polling) AM_Safe(AM_Poll(eb));
      else AM_PollBlock(eb);
    }
  }
  t1 = getCurrentTimeSec();

  /* counts on both sides */
  APP_CHECK(numrep == (sender ? iters : 0), "node %i got %i replies, expected %i", myproc,
            numrep, sender ? iters : 0);
  APP_CHECK(numreq == (myproc == 0 ? expect_req : 0), "node %i got %i requests, expected %i",
            myproc, numreq, myproc == 0 ? expect_req : 0);

  if (myproc == 0) {
    double secs = t1 - t0;
    printf("testping: procs=%i iters=%i mode=%s requests=%i time=%.3f s "
           "rate=%.0f req/s per_req=%.3f us\n",
           numprocs, iters, polling ? "P" : "B", expect_req, secs,
           secs > 0 ? expect_req / secs : 0.0, secs * 1e6 / expect_req);
    fflush(stdout);
  }

  AM_Safe(AMX_SPMDBarrier());
  /* nothing may arrive late */
  APP_CHECK(numrep == (sender ? iters : 0) && numreq == (myproc == 0 ? expect_req : 0),
            "late messages: node %i has %i requests, %i replies", myproc, numreq, numrep);
  printGlobalStats();
  AM_Safe(AMX_SPMDBarrier());
  AMX_SPMDExit(0);
  return 0;
}
