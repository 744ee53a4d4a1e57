/*
 * testbulk -- bulk transfer bandwidth: msgsize bytes per iteration, split into chunks of
 * at most AM_MaxLong(), each sent as AM_RequestXfer1(ep, partner, 100, h, src, len, 666)
 * into the right neighbour's segment, many outstanding at once.  The request handler
 * checks nbytes, buf == seg+100 and the data pattern (every word derived from the
 * message's sequence number in word 0; every sequence number must be seen exactly once),
 * then replies with AM_Reply0.
 * Usage: testbulk iters [msgsize=512] [P|B] [H|F]
 *   H: half duplex (even ranks send to rank+1), F: full duplex (everyone sends to rank+1)
 */
#include "apputils.h"

#define BULK_REQ_HANDLER 1
#define BULK_REP_HANDLER 2
#define DEST_OFFSET      100

static volatile int numreq = 0;
static volatile int numrep = 0;
static char *seg;
static size_t chunkmax;          /* largest chunk */
static int nchunks;              /* chunks per iteration */
static size_t msgsize;
static int expected_sender = -1; /* the rank sending to us, -1: none */
static unsigned char *seen;      /* per sequence number */
static int total_msgs;

static uint32_t word_of(uint32_t head, size_t i) {
  uint32_t x = head * 2654435761u + (uint32_t)i * 40503u;
  return x ^ (x >> 15);
}

/* chunk c of every iteration has length chunk_len(c) */
static size_t chunk_len(int c) {
  size_t off = (size_t)c * chunkmax;
  return (msgsize - off < chunkmax) ? msgsize - off : chunkmax;
}

static void bulk_request_handler(void *token, void *buf, int nbytes, int arg) {
  const uint32_t *w = (const uint32_t *)buf;
  int src = -1;
  uint32_t head, seq, sender;
  size_t i, nwords;
  AM_Safe(AMX_GetSourceId(token, &src));
  if (arg != 666) AMX_FatalErr("testbulk: arg %i != 666", arg);
  if ((char *)buf != seg + DEST_OFFSET)
    AMX_FatalErr("testbulk: buf %p != seg+%i %p", buf, DEST_OFFSET, (void *)(seg + DEST_OFFSET));
  if (src != expected_sender)
    AMX_FatalErr("testbulk: message from %i, expected only %i", src, expected_sender);
  if (nbytes < 4) AMX_FatalErr("testbulk: nbytes %i too small", nbytes);
  memcpy(&head, w, 4);
  seq = head & 0xffffffu;
  sender = head >> 24;
  if ((int)sender != src) AMX_FatalErr("testbulk: data from %u, source id %i", sender, src);
  if ((int)seq >= total_msgs) AMX_FatalErr("testbulk: sequence number %u out of range", seq);
  if ((size_t)nbytes != chunk_len((int)(seq % (uint32_t)nchunks)))
    AMX_FatalErr("testbulk: nbytes %i, expected %i for chunk %i", nbytes,
                 (int)chunk_len((int)(seq % (uint32_t)nchunks)), (int)(seq % (uint32_t)nchunks));
  if (seen[seq])
    AMX_FatalErr("testbulk: the data of message %u was seen twice (the handler of one message "
                 "saw another message's data in the segment)", seq);
  seen[seq] = 1;
  nwords = (size_t)nbytes / 4;
  for (i = 1; i < nwords; i++) {
    uint32_t v;
    memcpy(&v, w + i, 4);
    if (v != word_of(head, i))
      AMX_FatalErr("testbulk: message %u word %zu is 0x%08x, expected 0x%08x", seq, i, v,
                   word_of(head, i));
  }
  for (i = nwords * 4; i < (size_t)nbytes; i++) {
    if (((unsigned char *)buf)[i] != (unsigned char)(head + i))
      AMX_FatalErr("testbulk: message %u byte %zu wrong", seq, i);
  }
  numreq++;
  AM_Safe(AM_Reply0(token, BULK_REP_HANDLER));
}

/* declared with more parameters than the reply carries, as the original does */
static void bulk_reply_handler(void *token, int ctr, int dest, int val) {
  (void)token; (void)ctr; (void)dest; (void)val;
  numrep++;
}

static void fill(uint32_t *w, size_t nbytes, uint32_t head) {
  size_t i, nwords = nbytes / 4;
  w[0] = head;
  for (i = 1; i < nwords; i++) w[i] = word_of(head, i);
  for (i = nwords * 4; i < nbytes; i++) ((unsigned char *)w)[i] = (unsigned char)(head + i);
}

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  uint64_t networkpid;
  int myproc, numprocs, iters, polling = 1, fullduplex = 1, sender, partner, i, c;
  int expect_req = 0, sent = 0;
  uint32_t *src;
  double t0, t1, mybw, *allbw;

  TEST_STARTUP(argc, argv, networkpid, eb, ep, 1, 4, "iterations [msgsize] [P|B] [H|F]");
  myproc = AMX_SPMDMyProc();
  numprocs = AMX_SPMDNumProcs();

  iters = atoi(argv[1]);
  if (iters < 1) iters = 1;
  msgsize = (argc > 2) ? (size_t)atol(argv[2]) : 512;
  if (argc > 3) {
    if (argv[3][0] == 'B' || argv[3][0] == 'b') polling = 0;
    else if (argv[3][0] != 'P' && argv[3][0] != 'p') {
      if (myproc == 0) fprintf(stderr, "testbulk: mode must be P or B, not %s\n", argv[3]);
      AMX_SPMDExit(1);
    }
  }
  if (argc > 4) {
    if (argv[4][0] == 'H' || argv[4][0] == 'h') fullduplex = 0;
    else if (argv[4][0] != 'F' && argv[4][0] != 'f') {
      if (myproc == 0) fprintf(stderr, "testbulk: duplex must be H or F, not %s\n", argv[4]);
      AMX_SPMDExit(1);
    }
  }
  if (msgsize < 4) msgsize = 4;
  chunkmax = AM_MaxLong();
  nchunks = (int)((msgsize + chunkmax - 1) / chunkmax);
  total_msgs = iters * nchunks;
  if (total_msgs >= (1 << 24)) {
    if (myproc == 0) fprintf(stderr, "testbulk: too many messages\n");
    AMX_SPMDExit(1);
  }

  /* who sends to whom */
  partner = (myproc + 1) % numprocs;
  if (fullduplex) {
    sender = 1;
    expected_sender = (myproc + numprocs - 1) % numprocs;
  } else if (numprocs == 1) {
    sender = 1;
    expected_sender = 0;
  } else {
    sender = (myproc % 2 == 0) && (myproc + 1 < numprocs);
    expected_sender = (myproc % 2 == 1) ? myproc - 1 : -1;
  }
  if (expected_sender >= 0) expect_req = total_msgs;

  seg = (char *)malloc(DEST_OFFSET + (msgsize < chunkmax ? msgsize : chunkmax));
  src = (uint32_t *)malloc(chunkmax + 8);
  seen = (unsigned char *)calloc((size_t)total_msgs, 1);
  allbw = (double *)calloc((size_t)numprocs, sizeof(double));
  APP_CHECK(seg && src && seen && allbw, "out of memory");
  AM_Safe(AM_SetSeg(ep, seg, DEST_OFFSET + (msgsize < chunkmax ? msgsize : chunkmax)));

  setupUtilHandlers(ep, eb);
  AM_Safe(AM_SetHandler(ep, BULK_REQ_HANDLER, bulk_request_handler));
  AM_Safe(AM_SetHandler(ep, BULK_REP_HANDLER, bulk_reply_handler));

  AM_Safe(AMX_SPMDBarrier());
  t0 = getCurrentTimeSec();
  if (sender) {
    for (i = 0; i < iters; i++) {
      for (c = 0; c < nchunks; c++) {
        size_t len = chunk_len(c);
        uint32_t head = ((uint32_t)myproc << 24) | (uint32_t)(i * nchunks + c);
        fill(src, len, head);
        AM_Safe(AM_RequestXfer1(ep, partner, DEST_OFFSET, BULK_REQ_HANDLER, src, len, 666));
        sent++;
        if (polling) AM_Safe(AM_Poll(eb));
      }
    }
    while (numrep < sent) {
      if (polling) AM_Safe(AM_Poll(eb));
      else AM_PollBlock(eb);
    }
  }
  t1 = getCurrentTimeSec();
  while (numreq < expect_req) {
    if (polling) AM_Safe(AM_Poll(eb));
    else AM_PollBlock(eb);
  }
  APP_CHECK(numrep == (sender ? total_msgs : 0), "node %i: %i replies, expected %i", myproc,
            numrep, sender ? total_msgs : 0);
  APP_CHECK(numreq == expect_req, "node %i: %i requests, expected %i", myproc, numreq,
            expect_req);
  for (i = 0; i < expect_req; i++)
    APP_CHECK(seen[i], "node %i: message %i never seen", myproc, i);

  mybw = sender ? ((double)msgsize * iters) / (t1 - t0) / 1e6 : 0.0;
  AM_Safe(AMX_SPMDAllGather(&mybw, allbw, sizeof(double)));
  if (myproc == 0) {
    double sum = 0, mn = 1e30;
    int n = 0;
    for (i = 0; i < numprocs; i++) {
      if (allbw[i] <= 0) continue;
      sum += allbw[i];
      if (allbw[i] < mn) mn = allbw[i];
      n++;
    }
    printf("testbulk: procs=%i iters=%i msgsize=%zu chunks=%i mode=%s %s senders=%i "
           "per_sender_MBps=%.2f min_MBps=%.2f aggregate_MBps=%.2f\n",
           numprocs, iters, msgsize, nchunks, polling ? "P" : "B",
           fullduplex ? "full-duplex" : "half-duplex", n, n ? sum / n : 0.0, n ? mn : 0.0, sum);
    fflush(stdout);
  }

  AM_Safe(AMX_SPMDBarrier());
  printGlobalStats();
  AM_Safe(AMX_SPMDBarrier());
  AMX_SPMDExit(0);
  return 0;
}
