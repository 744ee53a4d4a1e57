/*
 * stats.c -- AMUDP's statistics for a known exchange (GASNet's --enable-stats dump
 * compares them): a 2-rank job (./stats 2) where rank 0 sends rank 1
 *   NS short requests answered by a short reply, NA short requests left unanswered,
 *   NM medium requests answered by a medium reply, NMA medium requests left unanswered,
 *   NL long requests answered by a long reply,
 * each kind in bursts with polling in between.  A request whose handler does not reply
 * gets AM-2's automatic reply, which AMUDP counts as a short reply sent.  Then, with
 * both ranks' amudp_stats_t gathered (AMUDP_SPMDAllGather), the requests sent by rank 0
 * must equal those rank 1 received, the replies rank 1 sent (automatic ones as short)
 * those rank 0 received, and every request must have exactly one reply:
 *   RequestsSent = [NS+NA, NM+NMA, NL],  RepliesSent = [NS+NA+NMA, NM, NL].
 * Also checks amudp_stats_t's layout against AMUDP 3.16's (offsets of every field).
 * Prints "stats: ok" on rank 0.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "amudp_spmd.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAILED CHECK (rank %d) %s:%d: %s\n", \
  AMUDP_SPMDMyProc(), __FILE__, __LINE__, #c); fflush(stderr); AMUDP_SPMDExit(1); } } while (0)
#define SA(c) _Static_assert(c, #c)

/* AMUDP 3.16's layout: 40 uint64_t in this order */
SA(sizeof(amudp_stats_t) == 40 * 8);
SA(offsetof(amudp_stats_t, RequestsSent) == 0 * 8);
SA(offsetof(amudp_stats_t, RepliesSent) == 3 * 8);
SA(offsetof(amudp_stats_t, RequestsRetransmitted) == 6 * 8);
SA(offsetof(amudp_stats_t, RepliesRetransmitted) == 9 * 8);
SA(offsetof(amudp_stats_t, RepliesSquashed) == 12 * 8);
SA(offsetof(amudp_stats_t, RequestsReceived) == 15 * 8);
SA(offsetof(amudp_stats_t, RepliesReceived) == 18 * 8);
SA(offsetof(amudp_stats_t, ReturnedMessages) == 21 * 8);
SA(offsetof(amudp_stats_t, OutOfOrderRequests) == 22 * 8);
SA(offsetof(amudp_stats_t, OutOfOrderReplies) == 23 * 8);
SA(offsetof(amudp_stats_t, RequestMinLatency) == 24 * 8);
SA(offsetof(amudp_stats_t, RequestMaxLatency) == 25 * 8);
SA(offsetof(amudp_stats_t, RequestSumLatency) == 26 * 8);
SA(offsetof(amudp_stats_t, RequestDataBytesSent) == 27 * 8);
SA(offsetof(amudp_stats_t, ReplyDataBytesSent) == 30 * 8);
SA(offsetof(amudp_stats_t, RequestTotalBytesSent) == 33 * 8);
SA(offsetof(amudp_stats_t, ReplyTotalBytesSent) == 36 * 8);
SA(offsetof(amudp_stats_t, TotalBytesSent) == 39 * 8);

enum { NS = 700, NA = 300, NM = 200, NMA = 100, NL = 50, BURST = 20 };
static char seg[1 << 16];
static char payload[512];
static volatile int replies;

static void h_s(void *t, int a) { CHECK(AM_Reply1(t, 20, a) == AM_OK); }
static void h_a(void *t, int a) { (void)t; (void)a; }
static void h_m(void *t, void *buf, size_t n, int a) { CHECK(AM_ReplyI1(t, 21, buf, n, a) == AM_OK); }
static void h_ma(void *t, void *buf, size_t n) { (void)t; (void)buf; (void)n; }
static void h_l(void *t, void *buf, size_t n) { CHECK(AM_ReplyXfer0(t, 4096, 22, buf, n) == AM_OK); }
static void h_r(void *t) { (void)t; replies++; }
static void h_r1(void *t, int a) { (void)t; (void)a; replies++; }
static void h_rm(void *t, void *buf, size_t n, int a) { (void)t; (void)buf; (void)n; (void)a; replies++; }

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  int i;
  CHECK(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep) == AM_OK);
  int me = AMUDP_SPMDMyProc();
  CHECK(AMUDP_SPMDNumProcs() == 2);
  CHECK(AM_SetSeg(ep, seg, sizeof seg) == AM_OK);
  CHECK(AM_SetHandler(ep, 10, h_s) == AM_OK);
  CHECK(AM_SetHandler(ep, 11, h_a) == AM_OK);
  CHECK(AM_SetHandler(ep, 12, h_m) == AM_OK);
  CHECK(AM_SetHandler(ep, 13, h_ma) == AM_OK);
  CHECK(AM_SetHandler(ep, 14, h_l) == AM_OK);
  CHECK(AM_SetHandler(ep, 20, h_r1) == AM_OK);
  CHECK(AM_SetHandler(ep, 21, h_rm) == AM_OK);
  CHECK(AM_SetHandler(ep, 22, h_r) == AM_OK);
  CHECK(AMUDP_SPMDBarrier() == AM_OK);
  CHECK(AMUDP_ResetEndpointStatistics(ep) == AM_OK);
  CHECK(AMUDP_SPMDBarrier() == AM_OK);
  if (me == 0) {
    memset(payload, 'p', sizeof payload);
    for (i = 0; i < NS + NA + NM + NMA + NL; i++) {
      if (i < NS) CHECK(AM_Request1(ep, 1, 10, i) == AM_OK);
      else if (i < NS + NA) CHECK(AM_Request1(ep, 1, 11, i) == AM_OK);
      else if (i < NS + NA + NM) CHECK(AM_RequestI1(ep, 1, 12, payload, 100, i) == AM_OK);
      else if (i < NS + NA + NM + NMA) CHECK(AM_RequestI0(ep, 1, 13, payload, 300) == AM_OK);
      else CHECK(AM_RequestXfer0(ep, 1, 1024, 14, payload, 512) == AM_OK);
      if (i % BURST == 0) CHECK(AM_Poll(eb) == AM_OK);
    }
    while (replies < NS + NM + NL) CHECK(AM_Poll(eb) == AM_OK);
  }
  /* the barrier waits for every request's reply (automatic ones too) */
  CHECK(AMUDP_SPMDBarrier() == AM_OK);
  amudp_stats_t mine, all[2];
  CHECK(AMUDP_GetEndpointStatistics(ep, &mine) == AM_OK);
  CHECK(AMUDP_SPMDAllGather(&mine, all, sizeof mine) == AM_OK);
  if (me == 0) {
    const amudp_stats_t *s = &all[0], *t = &all[1];
    const uint64_t req[3] = {NS + NA, NM + NMA, NL}, rep[3] = {NS + NA + NMA, NM, NL};
    int c;
    for (c = 0; c < 3; c++) {
      fprintf(stderr, "stats: category %d: requests sent %llu received %llu; replies sent %llu received %llu\n",
              c, (unsigned long long)s->RequestsSent[c], (unsigned long long)t->RequestsReceived[c],
              (unsigned long long)t->RepliesSent[c], (unsigned long long)s->RepliesReceived[c]);
      CHECK(s->RequestsSent[c] == req[c]);
      CHECK(t->RequestsReceived[c] == req[c]);
      CHECK(t->RepliesSent[c] == rep[c]);
      CHECK(s->RepliesReceived[c] == rep[c]);
      CHECK(t->RequestsSent[c] == 0 && s->RepliesSent[c] == 0);
    }
    CHECK(t->RepliesSent[0] + t->RepliesSent[1] + t->RepliesSent[2] ==
          s->RequestsSent[0] + s->RequestsSent[1] + s->RequestsSent[2]);
    /* the dump reports them */
    amudp_stats_t sum = AMUDP_initial_stats;
    CHECK(AMUDP_AggregateStatistics(&sum, &all[0]) == AM_OK);
    CHECK(AMUDP_AggregateStatistics(&sum, &all[1]) == AM_OK);
    CHECK(sum.RequestsSent[0] == req[0] && sum.RepliesSent[0] == rep[0]);
    const char *d = AMUDP_DumpStatistics(NULL, &sum, 1);
    CHECK(d != NULL);
    printf("stats: ok\n");
    fflush(stdout);
  }
  CHECK(AMUDP_SPMDBarrier() == AM_OK);
  AMUDP_SPMDExit(0);
  return 0;
}
