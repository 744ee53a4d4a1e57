/* t_stats: endpoint statistics after a known exchange (ramp.h "Statistics", spec §4.2).
 *
 * Rank 0 sends NS short (2 args), NM medium (MREQ bytes) and NL long (LREQ bytes)
 * requests; rank 1 replies with short / medium (MREP bytes) / long (LREP bytes) replies
 * and sends NC short requests of its own. Then the per-category counters must match
 * exactly, data byte counts must be the payload sizes (ramp.h: "payload only"), latency
 * and RTT fields must be consistent, ramp_AggregateStatistics must sum (min/max for the
 * Min/Max fields) starting from ramp_initial_stats, ramp_DumpStatistics must produce a
 * report (and write it to the FILE*), and ramp_ResetEndpointStatistics must reset to
 * ramp_initial_stats. Run without fault injection (exact counts).
 */
#include "common.h"

#define NS 50
#define NM 20
#define NL 10
#define NC 7
#define MREQ 100
#define LREQ 200
#define MREP 50
#define LREP 30

#define H_SREQ 60
#define H_MREQ 61
#define H_LREQ 62
#define H_SREP 63
#define H_MREP 64
#define H_LREP 65
#define H_CREQ 66
#define H_CREP 67

#define NFIELDS 60
static const char *field_names[NFIELDS] = {
    "RequestsSent[0]", "RequestsSent[1]", "RequestsSent[2]",
    "RepliesSent[0]", "RepliesSent[1]", "RepliesSent[2]",
    "RequestsRetransmitted[0]", "RequestsRetransmitted[1]", "RequestsRetransmitted[2]",
    "RepliesRetransmitted[0]", "RepliesRetransmitted[1]", "RepliesRetransmitted[2]",
    "RepliesSquashed[0]", "RepliesSquashed[1]", "RepliesSquashed[2]",
    "RequestsReceived[0]", "RequestsReceived[1]", "RequestsReceived[2]",
    "RepliesReceived[0]", "RepliesReceived[1]", "RepliesReceived[2]",
    "ReturnedMessages", "OutOfOrderRequests", "OutOfOrderReplies",
    "RequestMinLatency", "RequestMaxLatency", "RequestSumLatency",
    "RequestDataBytesSent[0]", "RequestDataBytesSent[1]", "RequestDataBytesSent[2]",
    "ReplyDataBytesSent[0]", "ReplyDataBytesSent[1]", "ReplyDataBytesSent[2]",
    "RequestTotalBytesSent[0]", "RequestTotalBytesSent[1]", "RequestTotalBytesSent[2]",
    "ReplyTotalBytesSent[0]", "ReplyTotalBytesSent[1]", "ReplyTotalBytesSent[2]",
    "TotalBytesSent", "RequestLatencySamples",
    "PacketsSent", "PacketsReceived", "PacketsRetransmitted",
    "AcksSent", "AcksReceived", "NacksSent", "NacksReceived",
    "DuplicatesDropped", "CorruptDropped", "StaleDropped",
    "RttMinNs", "RttMaxNs", "RttSumNs", "RttSamples",
    "CcReductions", "CcRandomLosses", "CcTimeouts", "CcUndone", "CcPaced"};

static int field_index(size_t off) { return (int)(off / sizeof(uint64_t)); }
#define FI(f) field_index(offsetof(ramp_stats_t, f))

static const uint64_t *fields(const ramp_stats_t *s) { return (const uint64_t *)(const void *)s; }

static pair_t P;
static int sreq, mreq, lreq, srep, mrep, lrep, creq, crep;
static uint8_t seg[8192];
static uint8_t payload[256];

static void h_sreq(void *t, int32_t a, int32_t b) { (void)a; (void)b; sreq++; AM_SAFE(AM_Reply1(t, H_SREP, 1)); }
static void h_mreq(void *t, void *buf, size_t n, int32_t a) {
  (void)buf; (void)a;
  CHECK(n == MREQ, "n %zu", n);
  mreq++;
  AM_SAFE(AM_ReplyI0(t, H_MREP, payload, MREP));
}
static void h_lreq(void *t, void *buf, size_t n, int32_t a, int32_t b, int32_t c) {
  (void)buf; (void)a; (void)b; (void)c;
  CHECK(n == LREQ, "n %zu", n);
  lreq++;
  AM_SAFE(AM_ReplyXfer0(t, 4096, H_LREP, payload, LREP));
}
static void h_srep(void *t, int32_t a) { (void)t; (void)a; srep++; }
static void h_mrep(void *t, void *buf, size_t n) { (void)t; (void)buf; CHECK(n == MREP, "n %zu", n); mrep++; }
static void h_lrep(void *t, void *buf, size_t n) { (void)t; (void)buf; CHECK(n == LREP, "n %zu", n); lrep++; }
static void h_creq(void *t) { creq++; AM_SAFE(AM_Reply0(t, H_CREP)); }
static void h_crep(void *t) { (void)t; crep++; }

static void returned_handler(int status, op_t opcode, void *token) {
  (void)token;
  FAIL("unexpected returned message: %s %s", ct_statusname(status), ct_opname((int)opcode));
}

static void diff_against_initial(const ramp_stats_t *s, const char *what) {
  const uint64_t *a = fields(s), *b = fields(&ramp_initial_stats);
  int bad = 0;
  for (int i = 0; i < NFIELDS; i++)
    if (a[i] != b[i]) {
      fprintf(stderr, "[%s] %s: %s = %" PRIu64 ", initial value %" PRIu64 "\n", g_label, what, field_names[i], a[i],
              b[i]);
      bad++;
    }
  CHECK(bad == 0, "%s: %d fields differ from ramp_initial_stats", what, bad);
}

static void setup(pair_t *p, void *arg) {
  (void)arg;
  ep_t ep = p->ep;
  AM_SAFE(AM_SetHandler(ep, 0, returned_handler));
  AM_SAFE(AM_SetHandler(ep, H_SREQ, h_sreq));
  AM_SAFE(AM_SetHandler(ep, H_MREQ, h_mreq));
  AM_SAFE(AM_SetHandler(ep, H_LREQ, h_lreq));
  AM_SAFE(AM_SetHandler(ep, H_SREP, h_srep));
  AM_SAFE(AM_SetHandler(ep, H_MREP, h_mrep));
  AM_SAFE(AM_SetHandler(ep, H_LREP, h_lrep));
  AM_SAFE(AM_SetHandler(ep, H_CREQ, h_creq));
  AM_SAFE(AM_SetHandler(ep, H_CREP, h_crep));
  AM_SAFE(AM_SetSeg(ep, seg, sizeof seg));
  ramp_stats_t s;
  AM_SAFE(ramp_GetEndpointStatistics(ep, &s));
  diff_against_initial(&s, "statistics of a new endpoint");
}

#define EQ(s, f, v)                                                                                     \
  CHECK((s).f == (uint64_t)(v), "rank %d: %s = %" PRIu64 ", expected %" PRIu64, who, #f, (uint64_t)(s).f, \
        (uint64_t)(v))

static void check_side(int who, const ramp_stats_t *mine, const ramp_stats_t *peer) {
  const ramp_stats_t s = *mine;
  const uint64_t sent[2][3] = {{NS, NM, NL}, {NC, 0, 0}};            /* requests sent by rank r */
  const uint64_t rdata[2][3] = {{0, NM * MREQ, NL * LREQ}, {0, 0, 0}};   /* request payload bytes */
  const uint64_t pdata[2][3] = {{0, 0, 0}, {0, NM * MREP, NL * LREP}};   /* reply payload bytes */
  for (int c = 0; c < 3; c++) {
    EQ(s, RequestsSent[c], sent[who][c]);
    EQ(s, RepliesSent[c], sent[1 - who][c]);
    CHECK(s.RequestsReceived[c] >= sent[1 - who][c], "rank %d: RequestsReceived[%d] = %" PRIu64 " < %" PRIu64, who,
          c, s.RequestsReceived[c], sent[1 - who][c]);
    CHECK(s.RepliesReceived[c] >= sent[who][c], "rank %d: RepliesReceived[%d] = %" PRIu64 " < %" PRIu64, who, c,
          s.RepliesReceived[c], sent[who][c]);
    if (peer->RequestsRetransmitted[c] == 0) EQ(s, RequestsReceived[c], sent[1 - who][c]);
    if (peer->RepliesRetransmitted[c] == 0) EQ(s, RepliesReceived[c], sent[who][c]);
    EQ(s, RequestDataBytesSent[c], rdata[who][c]);
    EQ(s, ReplyDataBytesSent[c], pdata[who][c]);
    if (sent[who][c])
      CHECK(s.RequestTotalBytesSent[c] > s.RequestDataBytesSent[c],
            "rank %d: RequestTotalBytesSent[%d] = %" PRIu64 " does not exceed the payload %" PRIu64, who, c,
            s.RequestTotalBytesSent[c], s.RequestDataBytesSent[c]);
    if (sent[1 - who][c])
      CHECK(s.ReplyTotalBytesSent[c] > s.ReplyDataBytesSent[c],
            "rank %d: ReplyTotalBytesSent[%d] = %" PRIu64 " does not exceed the payload %" PRIu64, who, c,
            s.ReplyTotalBytesSent[c], s.ReplyDataBytesSent[c]);
  }
  uint64_t tot = 0;
  for (int c = 0; c < 3; c++) tot += s.RequestTotalBytesSent[c] + s.ReplyTotalBytesSent[c];
  CHECK(s.TotalBytesSent >= tot, "rank %d: TotalBytesSent %" PRIu64 " < sum of per-category totals %" PRIu64, who,
        s.TotalBytesSent, tot);
  EQ(s, ReturnedMessages, 0);
  uint64_t nreq = sent[who][0] + sent[who][1] + sent[who][2];
  EQ(s, RequestLatencySamples, nreq);
  CHECK(s.RequestMinLatency > 0 && s.RequestMinLatency <= s.RequestMaxLatency,
        "rank %d: RequestMinLatency %" PRIu64 ", RequestMaxLatency %" PRIu64, who, s.RequestMinLatency,
        s.RequestMaxLatency);
  CHECK(s.RequestMaxLatency < 10000000000ULL, "rank %d: RequestMaxLatency %" PRIu64 " ns (> 10 s?)", who,
        s.RequestMaxLatency);
  CHECK(s.RequestSumLatency >= s.RequestMaxLatency && s.RequestSumLatency >= nreq * s.RequestMinLatency &&
            s.RequestSumLatency <= nreq * s.RequestMaxLatency,
        "rank %d: RequestSumLatency %" PRIu64 " inconsistent with min %" PRIu64 " max %" PRIu64 " n %" PRIu64, who,
        s.RequestSumLatency, s.RequestMinLatency, s.RequestMaxLatency, nreq);
  uint64_t msgs = 0;
  for (int c = 0; c < 3; c++) msgs += s.RequestsSent[c] + s.RepliesSent[c];
  CHECK(s.PacketsSent >= msgs, "rank %d: PacketsSent %" PRIu64 " < messages sent %" PRIu64, who, s.PacketsSent,
        msgs);
  CHECK(s.PacketsReceived > 0, "rank %d: PacketsReceived is 0", who);
  CHECK(s.RttSamples > 0, "rank %d: RttSamples is 0 after %" PRIu64 " requests", who, nreq);
  CHECK(s.RttMinNs <= s.RttMaxNs && s.RttSumNs >= s.RttMaxNs, "rank %d: RTT min %" PRIu64 " max %" PRIu64
        " sum %" PRIu64, who, s.RttMinNs, s.RttMaxNs, s.RttSumNs);
}

static void check_aggregate(const ramp_stats_t *a, const ramp_stats_t *b) {
  /* initial_stats itself */
  const uint64_t *in = fields(&ramp_initial_stats);
  for (int i = 0; i < NFIELDS; i++) {
    uint64_t want = (i == FI(RequestMinLatency) || i == FI(RttMinNs)) ? UINT64_MAX : 0;
    CHECK(in[i] == want, "ramp_initial_stats.%s = %" PRIu64 ", expected %" PRIu64, field_names[i], in[i], want);
  }
  ramp_stats_t id = ramp_initial_stats;
  AM_SAFE(ramp_AggregateStatistics(&id, &ramp_initial_stats));
  CHECK(memcmp(&id, &ramp_initial_stats, sizeof id) == 0, "aggregating ramp_initial_stats into itself changed it");

  ramp_stats_t sum = ramp_initial_stats;
  AM_SAFE(ramp_AggregateStatistics(&sum, a));
  AM_SAFE(ramp_AggregateStatistics(&sum, b));
  const uint64_t *fa = fields(a), *fb = fields(b), *fs = fields(&sum);
  for (int i = 0; i < NFIELDS; i++) {
    uint64_t want;
    if (i == FI(RequestMinLatency) || i == FI(RttMinNs))
      want = fa[i] < fb[i] ? fa[i] : fb[i];
    else if (i == FI(RequestMaxLatency) || i == FI(RttMaxNs))
      want = fa[i] > fb[i] ? fa[i] : fb[i];
    else
      want = fa[i] + fb[i];
    CHECK(fs[i] == want, "aggregate %s = %" PRIu64 ", expected %" PRIu64 " (from %" PRIu64 " and %" PRIu64 ")",
          field_names[i], fs[i], want, fa[i], fb[i]);
  }
  CHECK(sum.RequestsSent[0] == NS + NC && sum.RepliesSent[0] == NS + NC, "aggregate short counts");

  /* DumpStatistics: to NULL, to a FILE*, with global analysis */
  const char *r = ramp_DumpStatistics(NULL, &sum, 0);
  CHECK(r != NULL && strlen(r) > 0, "ramp_DumpStatistics(NULL, ...) returned an empty string");
  FILE *f = tmpfile();
  CHECK(f != NULL, "tmpfile");
  r = ramp_DumpStatistics(f, &sum, 1);
  CHECK(r != NULL && strlen(r) > 0, "ramp_DumpStatistics(FILE, ..., 1) returned an empty string");
  char *copy = strdup(r);
  fflush(f);
  long len = ftell(f);
  CHECK(len > 0, "ramp_DumpStatistics wrote nothing to the FILE*");
  char *content = calloc((size_t)len + 1, 1);
  rewind(f);
  CHECK(fread(content, 1, (size_t)len, f) == (size_t)len, "fread");
  CHECK(strstr(content, copy) != NULL, "the report written to the FILE* does not contain the returned string");
  fclose(f);
  free(content);
  free(copy);
  printf("---- ramp_DumpStatistics(stdout, aggregate, 1):\n");
  fflush(stdout);
  r = ramp_DumpStatistics(stdout, &sum, 1);
  fflush(stdout);
  printf("----\n");
  CHECK(r != NULL && strlen(r) > 0, "ramp_DumpStatistics(stdout, ...) returned an empty string");
}

int main(void) {
  ct_init("t_stats", CT_WATCHDOG_SECS);
  CHECK(sizeof(ramp_stats_t) == NFIELDS * sizeof(uint64_t), "sizeof(ramp_stats_t) = %zu, expected %zu",
        sizeof(ramp_stats_t), (size_t)NFIELDS * sizeof(uint64_t));
  CHECK(FI(CcPaced) == NFIELDS - 1 && FI(RttSamples) == 54 && FI(TotalBytesSent) == 39 && FI(RequestMinLatency) == 24,
        "ramp_stats_t field order differs from the contract");
  memset(payload, 0x5C, sizeof payload);
  PHASE("setup");
  spawn_pair(&P, AM_SEQ, 16, setup, NULL);

  PHASE("known exchange");
  if (P.rank == 0) {
    for (int i = 0; i < NS; i++) AM_SAFE(AM_Request2(P.ep, 1, H_SREQ, i, -i));
    for (int i = 0; i < NM; i++) AM_SAFE(AM_RequestI1(P.ep, 1, H_MREQ, payload, MREQ, i));
    for (int i = 0; i < NL; i++) AM_SAFE(AM_RequestXfer3(P.ep, 1, 64 * i, H_LREQ, payload, LREQ, i, 2, 3));
    POLL_UNTIL(P.eb, srep == NS && mrep == NM && lrep == NL, 20.0, "replies %d/%d/%d", srep, mrep, lrep);
  } else {
    for (int i = 0; i < NC; i++) AM_SAFE(AM_Request0(P.ep, 0, H_CREQ));
    POLL_UNTIL(P.eb, crep == NC, 20.0, "replies %d/%d", crep, NC);
  }
  pair_barrier(&P);
  poll_for_ms(P.eb, 300);
  pair_barrier(&P);

  PHASE("checking statistics");
  ramp_stats_t mine, peer;
  AM_SAFE(ramp_GetEndpointStatistics(P.ep, &mine));
  pair_exchange(&P, &mine, &peer, sizeof mine);
  if (P.rank == 0) {
    CHECK(sreq == 0 && creq == NC, "handler counts %d %d", sreq, creq);
  } else {
    CHECK(sreq == NS && mreq == NM && lreq == NL, "handler counts %d %d %d", sreq, mreq, lreq);
  }
  check_side(P.rank, &mine, &peer);
  if (P.rank == 0) check_aggregate(&mine, &peer);
  pair_barrier(&P);

  PHASE("reset");
  AM_SAFE(ramp_ResetEndpointStatistics(P.ep));
  AM_SAFE(ramp_GetEndpointStatistics(P.ep, &mine));
  diff_against_initial(&mine, "statistics after ramp_ResetEndpointStatistics");
  pair_finish(&P, 0);
  printf("t_stats: OK\n");
  return 0;
}
