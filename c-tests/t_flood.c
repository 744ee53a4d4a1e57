/* t_flood: many-to-one flow control (testping / testreadwrite style).
 *
 * Rank 1 floods N short requests (then N medium requests of 1000 bytes) at rank 0
 * without waiting for replies, with network depth 8: AM_Request* must block by polling
 * when it runs out of credits and never fail. Rank 0 must run each request handler
 * exactly once (checked per sequence number) and rank 1 must receive exactly N replies
 * (each exactly once). A third phase floods requests whose handler does not reply: only
 * the automatic replies release the credits (spec §2.12), and no reply handler may run
 * at the sender. Before the floods, AM_RequestXferAsync: with all 8 credits taken and the
 * peer not polling, it must return AM_ERR_IN_USE at once (and send nothing), then
 * succeed once replies have come back. Meaningful under fault injection.
 */
#include "common.h"

#define H_SREQ 50
#define H_SREP 51
#define H_MREQ 52
#define H_MREP 53
#define H_NOREPLY 54
#define H_ASYNC 55
#define H_ASYNC_REP 56
#define DEPTH 8
#define MSIZE 1000

static pair_t P;
static int N;
static uint8_t *req_seen, *rep_seen;
static int req_count, rep_count, dup_req, dup_rep;

/* longest time without any handler running, and how many had run when it started */
static double last_progress, max_gap;
static int max_gap_at;

static void mark(uint8_t *seen, int i, int *count, int *dups, const char *what) {
  CHECK(i >= 0 && i < N, "%s: sequence number %d out of range", what, i);
  double t = now_sec();
  if (last_progress > 0 && t - last_progress > max_gap) {
    max_gap = t - last_progress;
    max_gap_at = *count;
  }
  last_progress = t;
  if (seen[i]) (*dups)++;
  seen[i] = 1;
  (*count)++;
}

static void h_sreq(void *token, int32_t i, int32_t x) {
  CHECK(x == ~i, "short request %d: check arg 0x%x", (int)i, (unsigned)x);
  mark(req_seen, i, &req_count, &dup_req, "short request");
  AM_SAFE(AM_Reply2(token, H_SREP, i, -i));
}
static void h_srep(void *token, int32_t i, int32_t x) {
  (void)token;
  CHECK(x == -i, "short reply %d: check arg %d", (int)i, (int)x);
  mark(rep_seen, i, &rep_count, &dup_rep, "short reply");
}
static void h_mreq(void *token, void *buf, size_t n, int32_t i) {
  CHECK(n == MSIZE, "medium request %d: nbytes %zu", (int)i, n);
  const uint8_t *b = buf;
  for (size_t k = 0; k < n; k++) {
    uint8_t want = (uint8_t)(i * 7 + (int)k);
    if (b[k] != want) FAIL("medium request %d: byte %zu = 0x%02x, expected 0x%02x", (int)i, k, b[k], want);
  }
  mark(req_seen, i, &req_count, &dup_req, "medium request");
  AM_SAFE(AM_Reply1(token, H_MREP, i));
}
static void h_mrep(void *token, int32_t i) {
  (void)token;
  mark(rep_seen, i, &rep_count, &dup_rep, "medium reply");
}

static void h_noreply(void *token, int32_t i) {
  (void)token;
  mark(req_seen, i, &req_count, &dup_req, "no-reply request");
}

static uint8_t seg[4096];
static int async_ran, async_rep_ran;
static void h_async(void *token, void *buf, size_t n, int32_t i) {
  CHECK(buf == seg + 64 * i && n == 64, "async xfer %d: buf %p (seg %p) n %zu", (int)i, buf, (void *)seg, n);
  const uint8_t *b = buf;
  for (size_t k = 0; k < n; k++)
    CHECK(b[k] == (uint8_t)(i + (int)k), "async xfer %d: byte %zu = 0x%02x (source not copied before return?)",
          (int)i, k, b[k]);
  async_ran++;
  AM_SAFE(AM_Reply1(token, H_ASYNC_REP, i));
}
static void h_async_rep(void *token, int32_t i) {
  (void)token;
  (void)i;
  async_rep_ran++;
}

static void async_phase(void) {
  PHASE("async xfer: credits");
  pair_barrier(&P);
  pair_barrier_eb(&P, NULL); /* from here rank 0 does not poll for a while */
  if (P.rank == 0) {
    /* not polling until rank 1 has seen its call refused (a barrier that does not poll) */
    pair_barrier_eb(&P, NULL);
    PHASE("async xfer: serving");
    POLL_UNTIL_PROGRESS(P.eb, async_ran >= DEPTH + 1, async_ran, 20.0,
                        "async xfer: stalled at %d of %d handlers", async_ran, DEPTH + 1);
  } else {
    uint8_t buf[64];
    for (int i = 0; i < DEPTH; i++) {
      for (int k = 0; k < 64; k++) buf[k] = (uint8_t)(i + k);
      int rc = AM_RequestXferAsync1(P.ep, 0, 64 * (uintptr_t)i, H_ASYNC, buf, sizeof buf, i);
      CHECK(rc == AM_OK, "async xfer %d (credit available) returned %s", i, ct_errname(rc));
      memset(buf, 0xEE, sizeof buf);
    }
    for (int k = 0; k < 64; k++) buf[k] = (uint8_t)(DEPTH + k);
    int rc = AM_RequestXferAsync1(P.ep, 0, 64 * (uintptr_t)DEPTH, H_ASYNC, buf, sizeof buf, DEPTH);
    CHECK(rc == AM_ERR_IN_USE, "async xfer with all %d credits taken and the peer not polling returned %d (%s), "
          "expected AM_ERR_IN_USE", DEPTH, rc, ct_errname(rc));
    pair_barrier_eb(&P, NULL); /* rank 0 polls from here */
    /* Until rank 0 serves the 8, the call keeps refusing (a credit that never comes back
     * is a bug: the alarm). */
    int tries = 1;
    while ((rc = AM_RequestXferAsync1(P.ep, 0, 64 * (uintptr_t)DEPTH, H_ASYNC, buf, sizeof buf, DEPTH)) ==
           AM_ERR_IN_USE) {
      tries++;
    }
    CHECK(rc == AM_OK, "async xfer returned %s", ct_errname(rc));
    memset(buf, 0xEE, sizeof buf);
    POLL_UNTIL_PROGRESS(P.eb, async_rep_ran >= DEPTH + 1, async_rep_ran, 20.0,
                        "async xfer: stalled at %d of %d replies", async_rep_ran, DEPTH + 1);
    ct_note("async xfer: AM_ERR_IN_USE %d times while the peer slept", tries);
  }
  pair_barrier(&P);
  poll_for_ms(P.eb, 100);
  if (P.rank == 0)
    CHECK(async_ran == DEPTH + 1, "async xfer: handler ran %d times, expected %d (an AM_ERR_IN_USE call sent?)",
          async_ran, DEPTH + 1);
  else
    CHECK(async_rep_ran == DEPTH + 1, "async xfer: %d replies, expected %d", async_rep_ran, DEPTH + 1);
  pair_barrier(&P);
}

static void returned_handler(int status, op_t opcode, void *token) {
  (void)token;
  FAIL("unexpected returned message: %s %s", ct_statusname(status), ct_opname((int)opcode));
}

static void setup(pair_t *p, void *arg) {
  (void)arg;
  AM_SAFE(AM_SetHandler(p->ep, 0, returned_handler));
  AM_SAFE(AM_SetHandler(p->ep, H_SREQ, h_sreq));
  AM_SAFE(AM_SetHandler(p->ep, H_SREP, h_srep));
  AM_SAFE(AM_SetHandler(p->ep, H_MREQ, h_mreq));
  AM_SAFE(AM_SetHandler(p->ep, H_MREP, h_mrep));
  AM_SAFE(AM_SetHandler(p->ep, H_NOREPLY, h_noreply));
  AM_SAFE(AM_SetHandler(p->ep, H_ASYNC, h_async));
  AM_SAFE(AM_SetHandler(p->ep, H_ASYNC_REP, h_async_rep));
  AM_SAFE(AM_SetSeg(p->ep, seg, sizeof seg));
}

static void reset(void) {
  memset(req_seen, 0, (size_t)N);
  memset(rep_seen, 0, (size_t)N);
  req_count = rep_count = dup_req = dup_rep = 0;
  last_progress = max_gap = 0;
  max_gap_at = 0;
}

enum { PH_SHORT, PH_MEDIUM, PH_NOREPLY };

static void phase(int ph) {
  static const char *kinds[3] = {"short", "medium", "no-reply"};
  const char *kind = kinds[ph];
  const int medium = ph == PH_MEDIUM;
  reset();
  pair_barrier(&P);
  double t0 = now_sec();
  if (P.rank == 1) {
    PHASE(ph == PH_MEDIUM ? "flooding medium requests"
                          : ph == PH_SHORT ? "flooding short requests" : "flooding requests that get no reply");
    uint8_t buf[MSIZE];
    for (int i = 0; i < N; i++) {
      int rc;
      if (medium) {
        for (int k = 0; k < MSIZE; k++) buf[k] = (uint8_t)(i * 7 + k);
        rc = AM_RequestI1(P.ep, 0, H_MREQ, buf, MSIZE, i);
        memset(buf, 0xEE, sizeof buf);
      } else if (ph == PH_SHORT) {
        rc = AM_Request2(P.ep, 0, H_SREQ, i, ~i);
      } else {
        rc = AM_Request1(P.ep, 0, H_NOREPLY, i);
      }
      CHECK(rc == AM_OK, "%s request %d returned %d (%s): requests must block for credits, never fail", kind, i,
            rc, ct_errname(rc));
    }
    double ts = now_sec() - t0;
    if (ph == PH_NOREPLY) {
      /* with depth 8, every send past the 8th needed a credit back from an automatic reply */
      ct_note("%s flood: %d requests sent in %.2f s (credits came back by auto-replies)", kind, N, ts);
    } else {
      PHASE("waiting for the replies");
      POLL_UNTIL_PROGRESS(P.eb, rep_count >= N, rep_count, 20.0,
                          "%s flood: stalled at %d of %d replies", kind, rep_count, N);
      ct_note("%s flood: %d requests sent in %.2f s, all replies after %.2f s; longest pause between replies "
              "%.3f s (after %d replies)", kind, N, ts, now_sec() - t0, max_gap, max_gap_at);
    }
  } else {
    PHASE("serving the flood");
    POLL_UNTIL_PROGRESS(P.eb, req_count >= N, req_count, 20.0,
                        "%s flood: stalled at %d of %d request handlers", kind, req_count, N);
    ct_note("%s flood: longest pause between request handlers %.3f s (after %d)", kind, max_gap, max_gap_at);
  }
  PHASE("flood: settling");
  pair_barrier(&P);
  poll_for_ms(P.eb, 200);
  if (P.rank == 0) {
    CHECK(dup_req == 0, "%s flood: %d request handlers ran more than once", kind, dup_req);
    CHECK(req_count == N, "%s flood: %d request handler runs, expected exactly %d", kind, req_count, N);
    CHECK(rep_count == 0, "rank 0 got replies");
  } else if (ph == PH_NOREPLY) {
    CHECK(rep_count == 0, "no-reply flood: a reply handler ran %d times at the sender", rep_count);
  } else {
    CHECK(dup_rep == 0, "%s flood: %d reply handlers ran more than once", kind, dup_rep);
    CHECK(rep_count == N, "%s flood: %d reply handler runs, expected exactly %d", kind, rep_count, N);
    CHECK(req_count == 0, "rank 1 got requests");
  }
  pair_barrier(&P);
}

int main(void) {
  ct_init("t_flood", CT_WATCHDOG_SECS);
  N = (int)env_long("RAMP_CTEST_FLOOD_N", 10000);
  req_seen = calloc((size_t)N, 1);
  rep_seen = calloc((size_t)N, 1);
  CHECK(req_seen && rep_seen, "calloc");
  PHASE("setup");
  spawn_pair(&P, AM_SEQ, DEPTH, setup, NULL);
  async_phase();
  phase(PH_SHORT);
  phase(PH_MEDIUM);
  phase(PH_NOREPLY);
  pair_fault_report(&P);
  pair_finish(&P, 50);
  printf("t_flood: OK\n");
  return 0;
}
