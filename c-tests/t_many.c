/* t_many: many endpoints in one bundle, sparse translation tables (spec §2.6, §2.7,
 * §2.10).
 *
 * NE endpoints share one bundle; each has a 1024-entry table in which endpoint i maps
 * endpoint j at index IDX(i, j) (a different permutation for every i, so the compaction
 * into peer ids must not leak into what the API reports). Every endpoint sends a short,
 * a medium, a zero-byte medium, a long and a zero-byte long request to every endpoint
 * (itself included: loopback). Handlers check ramp_GetSourceId == the index at which the
 * RECEIVER mapped the sender, AM_GetSourceEndpoint, AM_GetDestEndpoint and AM_GetMsgTag,
 * and every message must be handled exactly once.
 *
 * Same-bundle credits (spec §2.11: requests poll the BUNDLE before sending and while
 * waiting for a credit): in a subprocess, endpoint A sends 3 requests with depth 1 to
 * endpoint B of the same bundle, without any AM_Poll of its own; each request after the
 * first can only get its credit if the blocked AM_Request polls B too. Must finish in 10 s.
 */
#include "common.h"

#include <sys/wait.h>

#define NE 24
#define TABLE 1024
#define NCAT 5 /* short, medium, medium 0 bytes, long, long 0 bytes */
#define H_REQ 100 /* + kind */
#define H_REP 110 /* + kind */
#define SEGSZ (NE * 64)

static eb_t eb;
static ep_t ep[NE];
static en_t name[NE];
static tag_t tag[NE];
static uint8_t seg[NE][SEGSZ];
static int req_seen[NE][NE][NCAT]; /* [dst][src][kind] */
static int rep_seen[NE][NE][NCAT]; /* [requester][replier][kind] */
static int total_rep;

static int IDX(int i, int j) { return (j * 37 + i * 101 + 5) % TABLE; }

static int which_ep(ep_t e) {
  for (int k = 0; k < NE; k++)
    if (ep[k] == e) return k;
  return -1;
}

/* common token checks: message from `src` delivered at `dst` */
static void check_token(void *token, int dst, int src, int is_req, int kind) {
  int id = -1;
  AM_SAFE(ramp_GetSourceId(token, &id));
  CHECK(id == IDX(dst, src), "%s %d -> %d (kind %d): ramp_GetSourceId %d, expected %d (where %d mapped %d)",
        is_req ? "request" : "reply", src, dst, kind, id, IDX(dst, src), dst, src);
  en_t s;
  AM_SAFE(AM_GetSourceEndpoint(token, &s));
  CHECK(ramp_enEqual(s, name[src]), "%s %d -> %d: source endpoint %s, expected %s", is_req ? "request" : "reply",
        src, dst, en_str(s), en_str(name[src]));
  tag_t t = 0;
  AM_SAFE(AM_GetMsgTag(token, &t));
  CHECK(t == tag[dst], "%s %d -> %d: tag 0x%" PRIx64 ", expected 0x%" PRIx64, is_req ? "request" : "reply", src,
        dst, (uint64_t)t, (uint64_t)tag[dst]);
  handler_t h;
  ramp_category_t c;
  int r;
  AM_SAFE(ramp_GetTokenInfo(token, &h, &c, &r));
  CHECK(h == (handler_t)((is_req ? H_REQ : H_REP) + kind) && !!r == !!is_req, "token info (%d, %d, %d)", (int)h,
        (int)c, r);
}

static void on_req(void *token, int kind, int32_t src, int32_t dst, void *buf, size_t n) {
  ep_t d = NULL;
  AM_SAFE(AM_GetDestEndpoint(token, &d));
  int me = which_ep(d);
  CHECK(me == dst, "request for %d delivered at endpoint %d", (int)dst, me);
  CHECK(src >= 0 && src < NE, "src %d", (int)src);
  check_token(token, me, src, 1, kind);
  req_seen[me][src][kind]++;
  if (kind == 1) {
    CHECK(n == 40 && ((const uint8_t *)buf)[0] == (uint8_t)(src * 3 + me), "medium payload from %d", (int)src);
  } else if (kind == 3) {
    CHECK(buf == seg[me] + 64 * src && n == 40 && ((const uint8_t *)buf)[39] == (uint8_t)(src * 3 + me),
          "long payload from %d at %d: buf %p n %zu", (int)src, me, buf, n);
  } else if (kind == 2 || kind == 4) {
    CHECK(n == 0, "zero-byte %s: nbytes %zu", kind == 2 ? "medium" : "long", n);
    if (kind == 4) CHECK(buf == seg[me] + 64 * src, "zero-byte long: buf %p", buf);
  }
  AM_SAFE(AM_Reply2(token, (handler_t)(H_REP + kind), me, src));
}

static void on_rep(void *token, int kind, int32_t replier, int32_t requester) {
  ep_t d = NULL;
  AM_SAFE(AM_GetDestEndpoint(token, &d));
  int me = which_ep(d);
  CHECK(me == requester, "reply for %d delivered at %d", (int)requester, me);
  check_token(token, me, replier, 0, kind);
  rep_seen[me][replier][kind]++;
  total_rep++;
}

#define REQ_S(k) \
  static void req_s##k(void *t, int32_t a, int32_t b) { on_req(t, k, a, b, NULL, 0); }
#define REQ_B(k) \
  static void req_b##k(void *t, void *buf, size_t n, int32_t a, int32_t b) { on_req(t, k, a, b, buf, n); }
#define REP(k) \
  static void rep_##k(void *t, int32_t a, int32_t b) { on_rep(t, k, a, b); }
REQ_S(0)
REQ_B(1)
REQ_B(2)
REQ_B(3)
REQ_B(4)
REP(0)
REP(1)
REP(2)
REP(3)
REP(4)

static void returned_handler(int status, op_t opcode, void *token) {
  (void)token;
  FAIL("unexpected returned message: %s %s", ct_statusname(status), ct_opname((int)opcode));
}

static int sb_ran, sb_rep, sb_ret;
static void sb_req(void *t) {
  sb_ran++;
  AM_SAFE(AM_Reply0(t, 6));
}
static void sb_reply(void *t) {
  (void)t;
  sb_rep++;
}
static void sb_h0(int status, op_t op, void *t) {
  (void)t;
  sb_ret++;
  FAIL("same bundle: request returned to handler 0 with %s (%s): the blocked AM_Request never let endpoint B "
       "of the same bundle run its handler",
       ct_statusname(status), ct_opname((int)op));
}

static void same_bundle_child(void) {
  ct_label_suffix("/same-bundle");
  alarm(CT_WATCHDOG_SECS);
  PHASE("same bundle: A sends 3 requests to B (depth 1) without polling; the 2nd must poll B for its credit");
  eb_t b;
  ep_t A, B;
  en_t na, nb;
  AM_SAFE(AM_Init());
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &b));
  AM_SAFE(AM_AllocateEndpoint(b, &A, &na));
  AM_SAFE(AM_AllocateEndpoint(b, &B, &nb));
  AM_SAFE(AM_SetTag(A, 11));
  AM_SAFE(AM_SetTag(B, 22));
  AM_SAFE(AM_Map(A, 0, nb, 22));
  AM_SAFE(AM_Map(B, 0, na, 11));
  ep_t e[2] = {A, B};
  for (int i = 0; i < 2; i++) {
    AM_SAFE(AM_SetHandler(e[i], 0, sb_h0));
    AM_SAFE(AM_SetHandler(e[i], 5, sb_req));
    AM_SAFE(AM_SetHandler(e[i], 6, sb_reply));
    AM_SAFE(AM_SetExpectedResources(e[i], 1, 1));
  }
  double t0 = now_sec();
  for (int k = 0; k < 3; k++) AM_SAFE(AM_Request0(A, 0, 5));
  POLL_UNTIL(b, sb_rep == 3, 5.0, "same bundle: %d of 3 replies", sb_rep);
  ct_note("same bundle: 3 requests with depth 1 completed in %.3f s", now_sec() - t0);
  fflush(stdout);
  _exit(0);
}

int main(void) {
  ct_init("t_many", CT_WATCHDOG_SECS);
  fflush(stdout);
  pid_t c = fork();
  CHECK(c >= 0, "fork");
  if (c == 0) same_bundle_child();
  int cst = 0;
  while (waitpid(c, &cst, 0) < 0 && errno == EINTR) {
  }
  int same_bundle_ok = WIFEXITED(cst) && WEXITSTATUS(cst) == 0;

  AM_SAFE(AM_Init());
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb));
  for (int i = 0; i < NE; i++) {
    AM_SAFE(AM_AllocateEndpoint(eb, &ep[i], &name[i]));
    tag[i] = 0xC0DE000000000000ULL | (tag_t)(i * 7919 + 3);
  }
  for (int i = 0; i < NE; i++)
    for (int j = 0; j < i; j++) CHECK(!ramp_enEqual(name[i], name[j]), "endpoints %d and %d share a name", i, j);
  /* check the permutation is injective per endpoint */
  for (int i = 0; i < NE; i++)
    for (int j = 0; j < NE; j++)
      for (int k = 0; k < j; k++) CHECK(IDX(i, j) != IDX(i, k), "test bug: IDX collision");

  PHASE("mapping");
  for (int i = 0; i < NE; i++) {
    AM_SAFE(AM_SetTag(ep[i], tag[i]));
    AM_SAFE(AM_SetNumTranslations(ep[i], TABLE));
    for (int j = 0; j < NE; j++) AM_SAFE(AM_Map(ep[i], IDX(i, j), name[j], tag[j]));
    AM_SAFE(AM_SetSeg(ep[i], seg[i], SEGSZ));
    AM_SAFE(AM_SetHandler(ep[i], 0, returned_handler));
    AM_SAFE(AM_SetHandler(ep[i], H_REQ + 0, req_s0));
    AM_SAFE(AM_SetHandler(ep[i], H_REQ + 1, req_b1));
    AM_SAFE(AM_SetHandler(ep[i], H_REQ + 2, req_b2));
    AM_SAFE(AM_SetHandler(ep[i], H_REQ + 3, req_b3));
    AM_SAFE(AM_SetHandler(ep[i], H_REQ + 4, req_b4));
    AM_SAFE(AM_SetHandler(ep[i], H_REP + 0, rep_0));
    AM_SAFE(AM_SetHandler(ep[i], H_REP + 1, rep_1));
    AM_SAFE(AM_SetHandler(ep[i], H_REP + 2, rep_2));
    AM_SAFE(AM_SetHandler(ep[i], H_REP + 3, rep_3));
    AM_SAFE(AM_SetHandler(ep[i], H_REP + 4, rep_4));
    AM_SAFE(AM_SetExpectedResources(ep[i], NE, 8)); /* 5 messages per pair: never waits for a credit */
  }
  /* the table still answers with the sparse indices after SetExpectedResources */
  for (int i = 0; i < NE; i++)
    for (int j = 0; j < NE; j++) {
      en_t gn;
      tag_t gt;
      EXPECT_RC(AM_GetTranslationInuse(ep[i], IDX(i, j)), AM_OK);
      AM_SAFE(AM_GetTranslationName(ep[i], IDX(i, j), &gn));
      AM_SAFE(AM_GetTranslationTag(ep[i], IDX(i, j), &gt));
      CHECK(ramp_enEqual(gn, name[j]) && gt == tag[j], "entry %d of endpoint %d", IDX(i, j), i);
    }

  PHASE("all to all");
  uint8_t buf[40];
  for (int i = 0; i < NE; i++)
    for (int j = 0; j < NE; j++) {
      uint32_t dest = (uint32_t)IDX(i, j);
      AM_SAFE(AM_Request2(ep[i], dest, H_REQ + 0, i, j));
      memset(buf, (uint8_t)(i * 3 + j), sizeof buf);
      AM_SAFE(AM_RequestI2(ep[i], dest, H_REQ + 1, buf, sizeof buf, i, j));
      AM_SAFE(AM_RequestI2(ep[i], dest, H_REQ + 2, NULL, 0, i, j));
      AM_SAFE(AM_RequestXfer2(ep[i], dest, 64 * (uintptr_t)i, H_REQ + 3, buf, sizeof buf, i, j));
      AM_SAFE(AM_RequestXfer2(ep[i], dest, 64 * (uintptr_t)i, H_REQ + 4, NULL, 0, i, j));
    }
  POLL_UNTIL(eb, total_rep >= NE * NE * NCAT, 20.0, "%d of %d replies", total_rep, NE * NE * NCAT);
  poll_for_ms(eb, 200);
  for (int i = 0; i < NE; i++)
    for (int j = 0; j < NE; j++)
      for (int k = 0; k < NCAT; k++) {
        CHECK(req_seen[j][i][k] == 1, "request kind %d from %d to %d handled %d times", k, i, j, req_seen[j][i][k]);
        CHECK(rep_seen[i][j][k] == 1, "reply kind %d from %d to %d handled %d times", k, j, i, rep_seen[i][j][k]);
      }

  PHASE("free half the endpoints, the rest still work");
  for (int i = 0; i < NE; i += 2) AM_SAFE(AM_FreeEndpoint(ep[i]));
  memset(req_seen, 0, sizeof req_seen);
  memset(rep_seen, 0, sizeof rep_seen);
  total_rep = 0;
  int expect = 0;
  for (int i = 1; i < NE; i += 2)
    for (int j = 1; j < NE; j += 2) {
      AM_SAFE(AM_Request2(ep[i], (uint32_t)IDX(i, j), H_REQ + 0, i, j));
      expect++;
    }
  POLL_UNTIL(eb, total_rep >= expect, 20.0, "%d of %d replies after freeing endpoints", total_rep, expect);

  PHASE("AM_WaitSema wakes for a message at any endpoint of the bundle");
  poll_for_ms(eb, 50);
  memset(req_seen, 0, sizeof req_seen);
  memset(rep_seen, 0, sizeof rep_seen);
  total_rep = 0;
  AM_SAFE(AM_Request2(ep[NE - 1], (uint32_t)IDX(NE - 1, 1), H_REQ + 0, NE - 1, 1)); /* last -> endpoint 1 */
  double w0 = now_sec();
  int waits = 0;
  while (total_rep < 1) {
    AM_SAFE(AM_SetEventMask(eb, AM_NOTEMPTY));
    AM_SAFE(AM_WaitSema(eb));
    waits++;
  }
  CHECK(req_seen[1][NE - 1][0] == 1 && rep_seen[NE - 1][1][0] == 1, "request/reply counts %d/%d",
        req_seen[1][NE - 1][0], rep_seen[NE - 1][1][0]);
  ct_note("AM_WaitSema over %d endpoints: round trip in %.3f s, %d wakeup(s)", NE / 2, now_sec() - w0, waits);
  PHASE("final checks");
  AM_SAFE(AM_FreeBundle(eb));
  AM_SAFE(AM_Terminate());
  CHECK(same_bundle_ok,
        "same bundle: a request waiting for a credit from another endpoint of its own bundle never completed "
        "(status 0x%x, see above): AM_Request must poll the whole bundle (spec 2.11)", cst);
  printf("t_many: OK (%d endpoints, %d messages)\n", NE, NE * NE * NCAT);
  return 0;
}
