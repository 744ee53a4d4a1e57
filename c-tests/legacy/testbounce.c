/*
 * testbounce -- maximum-size Long messages in both directions.  Odd ranks send
 * AM_RequestXfer1(ep, partner, 100, h, src, AM_MaxLong(), 666) to rank-1 (one process:
 * rank 0 to itself); the handler checks buf == seg+100, nbytes == AM_MaxLong() and the
 * data, rewrites it in place and replies AM_ReplyXfer1(token, 100, h, buf, nbytes, 666)
 * from its own segment (one process: source and destination overlap).
 * Usage: testbounce iters [P|B]   (1 process or an even number)
 */
#include "apputils.h"

#define BOUNCE_REQ_HANDLER 1
#define BOUNCE_REP_HANDLER 2
#define DEST_OFFSET        100

static char *seg;
static size_t maxlong;
static volatile int numreq = 0;
static volatile int numrep = 0;
static int partner;

static uint32_t pat(int sender, int iter, size_t i) {
  uint32_t x = (uint32_t)i * 2246822519u ^ ((uint32_t)iter << 20) ^ ((uint32_t)sender << 28);
  return x ^ (x >> 13);
}

static void check_words(const char *what, const void *buf, size_t nbytes, int sender, int iter,
                        uint32_t xorval) {
  size_t i, n = nbytes / 4;
  const uint32_t *w = (const uint32_t *)buf;
  for (i = 0; i < n; i++) {
    uint32_t v;
    memcpy(&v, w + i, 4);
    if (v != (pat(sender, iter, i) ^ xorval))
      AMX_FatalErr("testbounce: %s iteration %i word %zu is 0x%08x, expected 0x%08x", what,
                   iter, i, v, pat(sender, iter, i) ^ xorval);
  }
}

static void bounce_request_handler(void *token, void *buf, size_t nbytes, int arg) {
  int src = -1;
  size_t i, n = nbytes / 4;
  uint32_t *w = (uint32_t *)buf;
  AM_Safe(AMX_GetSourceId(token, &src));
  if (arg != 666) AMX_FatalErr("testbounce: request arg %i != 666", arg);
  if ((char *)buf != seg + DEST_OFFSET)
    AMX_FatalErr("testbounce: request buf %p != seg+100 %p", buf, (void *)(seg + DEST_OFFSET));
  if (nbytes != maxlong)
    AMX_FatalErr("testbounce: request nbytes %zu != AM_MaxLong() %zu", nbytes, maxlong);
  if (src != partner) AMX_FatalErr("testbounce: request from %i, partner is %i", src, partner);
  check_words("request", buf, nbytes, src, numreq, 0);
  for (i = 0; i < n; i++) w[i] = ~w[i];   /* rewrite in place */
  numreq++;
  AM_Safe(AM_ReplyXfer1(token, DEST_OFFSET, BOUNCE_REP_HANDLER, buf, nbytes, 666));
}

static void bounce_reply_handler(void *token, void *buf, size_t nbytes, int arg) {
  (void)token;
  if (arg != 666) AMX_FatalErr("testbounce: reply arg %i != 666", arg);
  if ((char *)buf != seg + DEST_OFFSET)
    AMX_FatalErr("testbounce: reply buf %p != seg+100 %p", buf, (void *)(seg + DEST_OFFSET));
  if (nbytes != maxlong)
    AMX_FatalErr("testbounce: reply nbytes %zu != AM_MaxLong() %zu", nbytes, maxlong);
  check_words("reply", buf, nbytes, AMX_SPMDMyProc(), numrep, 0xffffffffu);
  numrep++;
}

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  uint64_t networkpid;
  int myproc, numprocs, iters, polling = 1, sender, i;
  size_t k;
  uint32_t *src;
  double t0, t1;

  TEST_STARTUP(argc, argv, networkpid, eb, ep, 1, 2, "iterations [P|B]");
  myproc = AMX_SPMDMyProc();
  numprocs = AMX_SPMDNumProcs();
  if (numprocs > 1 && numprocs % 2) {
    if (myproc == 0) fprintf(stderr, "testbounce: needs 1 process or an even number\n");
    AMX_SPMDExit(1);
  }
  iters = atoi(argv[1]);
  if (iters < 1) iters = 1;
  if (argc > 2) {
    if (argv[2][0] == 'B' || argv[2][0] == 'b') polling = 0;
    else if (argv[2][0] != 'P' && argv[2][0] != 'p') {
      if (myproc == 0) fprintf(stderr, "testbounce: mode must be P or B, not %s\n", argv[2]);
      AMX_SPMDExit(1);
    }
  }
  maxlong = AM_MaxLong();
  if (numprocs == 1) partner = 0;
  else partner = (myproc % 2) ? myproc - 1 : myproc + 1;
  sender = (numprocs == 1) || (myproc % 2 == 1);

  seg = (char *)malloc(maxlong + DEST_OFFSET);
  src = (uint32_t *)malloc(maxlong);
  APP_CHECK(seg && src, "out of memory");
  memset(seg, 0, maxlong + DEST_OFFSET);
  AM_Safe(AM_SetSeg(ep, seg, maxlong + DEST_OFFSET));
  setupUtilHandlers(ep, eb);
  AM_Safe(AM_SetHandler(ep, BOUNCE_REQ_HANDLER, bounce_request_handler));
  AM_Safe(AM_SetHandler(ep, BOUNCE_REP_HANDLER, bounce_reply_handler));

  AM_Safe(AMX_SPMDBarrier());
  t0 = getCurrentTimeSec();
  if (sender) {
    for (i = 0; i < iters; i++) {
      for (k = 0; k < maxlong / 4; k++) src[k] = pat(myproc, i, k);
      AM_Safe(AM_RequestXfer1(ep, partner, DEST_OFFSET, BOUNCE_REQ_HANDLER, src, maxlong, 666));
      memset(src, 0xEE, maxlong);  /* the source buffer is ours again */
      while (numrep < i + 1) {
        if (polling) AM_Safe(AM_Poll(eb));
        else AM_PollBlock(eb);
      }
    }
  } else {
    while (numreq < iters) {
      if (polling) AM_Safe(AM_Poll(eb));
      else AM_PollBlock(eb);
    }
  }
  t1 = getCurrentTimeSec();
  APP_CHECK(numrep == (sender ? iters : 0), "node %i: %i replies", myproc, numrep);
  APP_CHECK(numreq == ((numprocs == 1 || !sender) ? iters : 0), "node %i: %i requests", myproc,
            numreq);

  if (myproc == (numprocs == 1 ? 0 : 1)) {
    printf("testbounce: procs=%i iters=%i msgsize=%zu mode=%s round_trip_us=%.1f "
           "MBps=%.2f (both directions, pair 0/1)\n",
           numprocs, iters, maxlong, polling ? "P" : "B", (t1 - t0) * 1e6 / iters,
           2.0 * maxlong * iters / (t1 - t0) / 1e6);
    fflush(stdout);
  }

  AM_Safe(AMX_SPMDBarrier());
  printGlobalStats();
  AM_Safe(AMX_SPMDBarrier());
  AMX_SPMDExit(0);
  return 0;
}
