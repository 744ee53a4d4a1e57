/* t_drain: pull-style receive (ramp.h, "pull-style receive"): ramp_Drain, ramp_DrainRelease.
 *
 * One process, one bundle, two endpoints A and B over real UDP sockets, each mapped to
 * the other at index 0. Checks:
 *   - bad arguments give AM_ERR_BAD_ARG (NULL bundle, NULL count, negative max, NULL
 *     array with max > 0); max 0 with a NULL array is legal;
 *   - a drained request is described (endpoint, handler, category, nargs, args, flags,
 *     source id) and its installed C handler is NOT called;
 *   - its token lives after ramp_Drain returns: token queries work, one reply works, a
 *     second reply is refused; after the next drain the token is dead (AM_ERR_BAD_ARG);
 *   - a drained reply cannot be replied to;
 *   - an unreplied request gets its automatic reply only at ramp_DrainRelease, the next
 *     drain or its ramp_DrainEnd: with network depth 1, the requester's credit stays
 *     taken until then (AM_RequestXferAsync returns AM_ERR_IN_USE) and is free after;
 *     ramp_DrainEnd refuses a token that is not held (NULL, ended already);
 *   - medium payloads are described in place (the library's buffer, writable) and can be
 *     echoed from it; long payloads point into the segment;
 *   - a message returned to handler 0 is described with RAMP_MSG_RETURNED, its status and
 *     opcode, and cannot be replied to;
 *   - ramp_RequestShort and ramp_DrainReply (by index in the last drain), and their
 *     one-argument forms ramp_RequestShort1 and ramp_DrainReply1, check their
 *     arguments, reply once, refuse an ended or released message;
 *   - ramp_DrainOn (ramp_DrainWait's arguments in a ramp_drain_t) checks them as
 *     ramp_DrainWait does (and a NULL descriptor), drains and waits alike, writes count
 *     and returns it, or minus the error code; a descriptor marked with another
 *     thread's ramp_DrainThread() is refused (RAMP_DRAIN_NOT_MINE), untouched;
 *   - ramp_Drain inside a running handler is refused (AM_ERR_RESOURCE), and messages that
 *     arrive during AM_Poll still go to the installed handlers.
 * Meaningful under loss too (run.sh's fault pass): every wait is a drain or poll loop.
 */
#include "common.h"

#define TAG 0x5eedf00d12345678ULL
#define H_REQ 10    /* request handler at B (drained, never called by drain) */
#define H_REP 11    /* reply handler at A */
#define H_MED 12    /* medium request at B */
#define H_MREP 13   /* medium reply at A */
#define H_LONG 14   /* long request at B */
#define H_NESTED 15 /* request at B whose C handler calls ramp_Drain */
#define H_NONE 99   /* not registered anywhere */
#define NMSG 8
#define SEGLEN 4096

static eb_t eb;
static ep_t A, B;
static en_t nameA, nameB;
static volatile int c_handler_calls;
static volatile int nested_rc = -1;
static volatile int nested_calls;

static void on_req(void *token, int32_t a, int32_t b, int32_t c) {
  (void)token; (void)a; (void)b; (void)c;
  c_handler_calls++;
}
static void on_any(void *token) { (void)token; c_handler_calls++; }
static void on_nested(void *token) {
  ramp_msg_t m[2];
  int n = -1;
  (void)token;
  nested_rc = ramp_Drain(eb, m, 2, &n);
  nested_calls++;
}
static void on_returned(int status, op_t opcode, void *token) {
  (void)status; (void)opcode; (void)token;
  c_handler_calls++;
}

/* Drains until a message arrives; returns how many (a hang: the alarm). */
static int drain_some(ramp_msg_t *m, const char *what) {
  int n = 0;
  ct_waiting(__FILE__, __LINE__, "no message drained: %s", what);
  for (;;) {
    AM_SAFE(ramp_Drain(eb, m, NMSG, &n));
    if (n > 0) return n;
  }
}

int main(void) {
  ct_init("t_drain", CT_WATCHDOG_SECS);
  ramp_msg_t m[NMSG];
  int n = -1;
  static char segB[SEGLEN];
  static char xbyte[1] = {'x'};

  PHASE("bad arguments");
  EXPECT_RC(ramp_Drain(NULL, m, NMSG, &n), AM_ERR_BAD_ARG);
  CHECK(n == 0, "count is written (0) on error, got %d", n);
  AM_SAFE(AM_Init());
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb));
  EXPECT_RC(ramp_Drain(eb, m, NMSG, NULL), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_Drain(eb, m, -1, &n), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_Drain(eb, NULL, 1, &n), AM_ERR_BAD_ARG);
  AM_SAFE(ramp_Drain(eb, NULL, 0, &n));
  CHECK(n == 0, "nothing drained, got %d", n);
  AM_SAFE(ramp_DrainRelease());

  PHASE("setup");
  AM_SAFE(AM_AllocateEndpoint(eb, &A, &nameA));
  AM_SAFE(AM_AllocateEndpoint(eb, &B, &nameB));
  AM_SAFE(AM_SetTag(A, TAG));
  AM_SAFE(AM_SetTag(B, TAG));
  AM_SAFE(AM_Map(A, 0, nameB, TAG));
  AM_SAFE(AM_Map(B, 0, nameA, TAG));
  AM_SAFE(AM_SetHandler(B, H_REQ, on_req));
  AM_SAFE(AM_SetHandler(B, H_MED, on_any));
  AM_SAFE(AM_SetHandler(B, H_LONG, on_any));
  AM_SAFE(AM_SetHandler(B, H_NESTED, on_nested));
  AM_SAFE(AM_SetHandler(A, H_REP, on_any));
  AM_SAFE(AM_SetHandler(A, H_MREP, on_any));
  AM_SAFE(AM_SetHandler(A, 0, on_returned));
  AM_SAFE(AM_SetSeg(B, segB, SEGLEN));
  AM_SAFE(AM_SetExpectedResources(A, 2, 1)); /* depth 1: one request in flight */
  AM_SAFE(AM_SetExpectedResources(B, 2, 1));

  PHASE("a drained short request");
  AM_SAFE(AM_Request3(A, 0, H_REQ, 1, -2, 3));
  n = drain_some(m, "the short request");
  CHECK(n == 1, "one message, got %d", n);
  CHECK(c_handler_calls == 0, "the installed handler ran %d time(s)", c_handler_calls);
  CHECK(m[0].ep == B, "received by B");
  CHECK(m[0].handler == H_REQ && m[0].category == ramp_Short && m[0].nargs == 3,
        "handler %d category %d nargs %d", m[0].handler, m[0].category, m[0].nargs);
  CHECK(m[0].args[0] == 1 && m[0].args[1] == -2 && m[0].args[2] == 3 && m[0].args[3] == 0,
        "args %d %d %d %d", m[0].args[0], m[0].args[1], m[0].args[2], m[0].args[3]);
  CHECK(m[0].flags == RAMP_MSG_REQUEST, "flags %d", m[0].flags);
  CHECK(m[0].source_id == 0 && m[0].buf == NULL && m[0].nbytes == 0, "source %d buf %p n %zu",
        m[0].source_id, m[0].buf, m[0].nbytes);

  PHASE("its token lives until the next drain");
  void *tok = m[0].token;
  handler_t h = 0;
  ramp_category_t cat = ramp_Long;
  int is_req = 0, nargs = -1;
  en_t src;
  tag_t tag = 0;
  AM_SAFE(ramp_GetTokenInfo(tok, &h, &cat, &is_req));
  CHECK(h == H_REQ && cat == ramp_Short && is_req, "token info %d %d %d", h, cat, is_req);
  AM_SAFE(ramp_GetTokenArgCount(tok, &nargs));
  CHECK(nargs == 3, "arg count %d", nargs);
  AM_SAFE(AM_GetSourceEndpoint(tok, &src));
  CHECK(ramp_enEqual(src, nameA), "source is A, got %s", en_str(src));
  AM_SAFE(AM_GetMsgTag(tok, &tag));
  CHECK(tag == TAG, "tag %" PRIx64, (uint64_t)tag);
  AM_SAFE(AM_Reply1(tok, H_REP, 42));
  EXPECT_RC(AM_Reply1(tok, H_REP, 43), AM_ERR_RESOURCE); /* once only */

  PHASE("the reply, drained");
  n = drain_some(m, "the reply");
  EXPECT_RC(ramp_GetTokenInfo(tok, &h, &cat, &is_req), AM_ERR_BAD_ARG); /* dead now */
  EXPECT_RC(AM_Reply1(tok, H_REP, 44), AM_ERR_BAD_ARG);
  CHECK(n == 1 && m[0].ep == A && m[0].handler == H_REP && m[0].nargs == 1 && m[0].args[0] == 42,
        "reply: n %d handler %d nargs %d arg %d", n, m[0].handler, m[0].nargs, m[0].args[0]);
  CHECK(m[0].flags == 0, "a reply has no flags, got %d", m[0].flags);
  EXPECT_RC(AM_Reply0(m[0].token, H_REP), AM_ERR_RESOURCE); /* replies cannot be replied to */
  AM_SAFE(ramp_DrainRelease());
  EXPECT_RC(ramp_GetTokenInfo(m[0].token, &h, &cat, &is_req), AM_ERR_BAD_ARG);
  CHECK(c_handler_calls == 0, "no installed handler ran (%d)", c_handler_calls);

  PHASE("the fast calls: ramp_RequestShort, ramp_DrainReply");
  {
    int32_t av[3] = {4, 5, 6};
    int32_t one = 77;
    EXPECT_RC(ramp_RequestShort(NULL, 0, H_REQ, 3, av), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_RequestShort(A, 0, H_REQ, 17, av), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_RequestShort(A, 0, H_REQ, 3, NULL), AM_ERR_BAD_ARG);
    AM_SAFE(ramp_RequestShort(A, 0, H_REQ, 3, av));
    n = drain_some(m, "the request of ramp_RequestShort");
    CHECK(n == 1 && m[0].ep == B && m[0].nargs == 3 && m[0].args[0] == 4 && m[0].args[2] == 6,
          "n %d nargs %d", n, m[0].nargs);
    EXPECT_RC(ramp_DrainReply(-1, H_REP, 1, &one), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_DrainReply(1, H_REP, 1, &one), AM_ERR_BAD_ARG); /* no message 1 */
    EXPECT_RC(ramp_DrainReply(0, H_REP, 17, &one), AM_ERR_BAD_ARG);
    AM_SAFE(ramp_DrainReply(0, H_REP, 1, &one));
    EXPECT_RC(ramp_DrainReply(0, H_REP, 1, &one), AM_ERR_RESOURCE); /* once only */
    n = drain_some(m, "the reply of ramp_DrainReply");
    CHECK(n == 1 && m[0].ep == A && m[0].handler == H_REP && m[0].args[0] == 77,
          "n %d handler %d arg %d", n, m[0].handler, m[0].args[0]);
    EXPECT_RC(ramp_DrainReply(0, H_REP, 1, &one), AM_ERR_RESOURCE); /* a reply now */
    /* the one-argument forms, by value */
    EXPECT_RC(ramp_RequestShort1(NULL, 0, H_REQ, 5), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_RequestShort1((ep_t)(uintptr_t)0x7fff0001, 0, H_REQ, 5), AM_ERR_BAD_ARG);
    AM_SAFE(ramp_RequestShort1(A, 0, H_REQ, -5));
    n = drain_some(m, "the request of ramp_RequestShort1");
    CHECK(n == 1 && m[0].ep == B && m[0].handler == H_REQ && m[0].nargs == 1 &&
              m[0].args[0] == -5 && (m[0].flags & RAMP_MSG_REQUEST),
          "n %d nargs %d arg %d", n, m[0].nargs, m[0].args[0]);
    EXPECT_RC(ramp_DrainReply1(-1, H_REP, 1), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_DrainReply1(1, H_REP, 1), AM_ERR_BAD_ARG); /* no message 1 */
    AM_SAFE(ramp_DrainReply1(0, H_REP, (int32_t)0x80000001));
    EXPECT_RC(ramp_DrainReply1(0, H_REP, 2), AM_ERR_RESOURCE); /* once only */
    EXPECT_RC(ramp_DrainReply(0, H_REP, 1, &one), AM_ERR_RESOURCE); /* either way */
    n = drain_some(m, "the reply of ramp_DrainReply1");
    CHECK(n == 1 && m[0].ep == A && m[0].handler == H_REP && m[0].nargs == 1 &&
              m[0].args[0] == (int32_t)0x80000001 && m[0].flags == 0,
          "n %d handler %d nargs %d arg %d", n, m[0].handler, m[0].nargs, m[0].args[0]);
    EXPECT_RC(ramp_DrainReply1(0, H_REP, 3), AM_ERR_RESOURCE); /* a reply now */
    AM_SAFE(ramp_DrainRelease());
    EXPECT_RC(ramp_DrainReply1(0, H_REP, 3), AM_ERR_BAD_ARG); /* released */
    AM_SAFE(ramp_RequestShort(A, 0, H_REQ, 0, NULL));
    n = drain_some(m, "a request to end");
    AM_SAFE(ramp_DrainEnd(m[0].token)); /* its automatic reply */
    EXPECT_RC(ramp_DrainReply(0, H_REP, 0, NULL), AM_ERR_BAD_ARG); /* ended */
    AM_SAFE(ramp_DrainRelease());
    EXPECT_RC(ramp_DrainReply(0, H_REP, 0, NULL), AM_ERR_BAD_ARG); /* released */
    CHECK(c_handler_calls == 0, "no installed handler ran (%d)", c_handler_calls);
  }

  PHASE("ramp_DrainOn: ramp_DrainWait's arguments in a struct");
  {
    /* returns the count, or minus the error code */
    ramp_drain_t d = {eb, m, NMSG, -1, 0, 0};
    EXPECT_RC(ramp_DrainOn(NULL), -AM_ERR_BAD_ARG);
    d.spin_us = -1;
    EXPECT_RC(ramp_DrainOn(&d), -AM_ERR_BAD_ARG);
    CHECK(d.count == 0, "count written (0) on error, got %d", d.count);
    d.spin_us = 1000001;
    EXPECT_RC(ramp_DrainOn(&d), -AM_ERR_BAD_ARG);
    d.spin_us = 0, d.msgs = NULL;
    EXPECT_RC(ramp_DrainOn(&d), -AM_ERR_BAD_ARG); /* NULL array, max > 0 */
    d.msgs = m, d.max = -1;
    EXPECT_RC(ramp_DrainOn(&d), -AM_ERR_BAD_ARG);
    d.max = NMSG, d.eb = NULL;
    EXPECT_RC(ramp_DrainOn(&d), -AM_ERR_BAD_ARG);
    /* d->thread: another thread's id refused (nothing done, d untouched), its own taken */
    int me = ramp_DrainThread();
    CHECK(me > 0 && ramp_DrainThread() == me, "ramp_DrainThread %d", me);
    d.eb = eb, d.spin_us = 0, d.thread = me + 1, d.count = -5;
    EXPECT_RC(ramp_DrainOn(&d), RAMP_DRAIN_NOT_MINE);
    CHECK(d.count == -5, "a refused descriptor was written (count %d)", d.count);
    d.thread = me;
    EXPECT_RC(ramp_DrainOn(&d), 0);
    CHECK(d.count == 0, "nothing drained, got %d", d.count);
    d.eb = eb, d.spin_us = 1000;
    EXPECT_RC(ramp_DrainOn(&d), 0); /* nothing comes: back after about 1 ms */
    CHECK(d.count == 0, "nothing drained, got %d", d.count);
    AM_SAFE(ramp_RequestShort1(A, 0, H_REQ, 31));
    d.spin_us = 100000;
    int got;
    do {
      got = ramp_DrainOn(&d);
      CHECK(got >= 0 && got == d.count, "ramp_DrainOn returned %d, count %d", got, d.count);
    } while (got == 0);
    CHECK(d.count == 1 && m[0].ep == B && m[0].handler == H_REQ && m[0].args[0] == 31 &&
              (m[0].flags & RAMP_MSG_REQUEST),
          "n %d handler %d arg %d", d.count, m[0].handler, m[0].args[0]);
    AM_SAFE(ramp_DrainReply1(0, H_REP, 32));
    do {
      got = ramp_DrainOn(&d);
      CHECK(got >= 0 && got == d.count, "ramp_DrainOn returned %d, count %d", got, d.count);
    } while (got == 0);
    CHECK(d.count == 1 && m[0].ep == A && m[0].handler == H_REP && m[0].args[0] == 32,
          "n %d handler %d arg %d", d.count, m[0].handler, m[0].args[0]);
    AM_SAFE(ramp_DrainRelease());
    CHECK(c_handler_calls == 0, "no installed handler ran (%d)", c_handler_calls);
  }

  PHASE("automatic reply at release");
  AM_SAFE(AM_Request3(A, 0, H_REQ, 7, 8, 9));
  n = drain_some(m, "the unreplied request");
  CHECK(n == 1 && m[0].handler == H_REQ && m[0].args[0] == 7, "request 7, n %d", n);
  /* held, not replied: A's only credit stays taken, whatever AM_Poll moves */
  for (int i = 0; i < 20; i++) {
    AM_SAFE(AM_Poll(eb));
    sleep_ms(1);
  }
  EXPECT_RC(AM_RequestXferAsync0(A, 0, 0, H_LONG, xbyte, 1), AM_ERR_IN_USE);
  AM_SAFE(ramp_DrainRelease()); /* the automatic reply goes out now */
  {
    int rc;
    while ((rc = AM_RequestXferAsync0(A, 0, 0, H_LONG, xbyte, 1)) == AM_ERR_IN_USE) {
      AM_SAFE(AM_Poll(eb));
    }
    CHECK(rc == AM_OK, "async long request: %s", ct_errname(rc));
  }
  n = drain_some(m, "the long request");
  CHECK(n == 1 && m[0].category == ramp_Long && m[0].nbytes == 1 && m[0].buf == segB,
        "long: n %d category %d nbytes %zu buf %p (segment %p)", n, m[0].category, m[0].nbytes,
        m[0].buf, (void *)segB);
  CHECK(segB[0] == 'x', "long payload in the segment");
  /* unreplied too: ramp_DrainEnd sends its automatic reply now (the request below
   * waits for A's only credit with AM_Poll, which does not end held messages) */
  EXPECT_RC(ramp_DrainEnd(NULL), AM_ERR_BAD_ARG);
  AM_SAFE(ramp_DrainEnd(m[0].token));
  EXPECT_RC(ramp_DrainEnd(m[0].token), AM_ERR_BAD_ARG); /* ended already */
  EXPECT_RC(ramp_GetTokenInfo(m[0].token, &h, &cat, &is_req), AM_ERR_BAD_ARG);
  CHECK(segB[0] == 'x', "still there");

  PHASE("medium in place, echoed");
  char payload[100];
  for (int i = 0; i < 100; i++) payload[i] = (char)(i * 7);
  AM_SAFE(AM_RequestI1(A, 0, H_MED, payload, sizeof payload, 5)); /* waits for the credit */
  n = drain_some(m, "the medium request");
  CHECK(n == 1 && m[0].category == ramp_Medium && m[0].nbytes == 100 && m[0].buf != NULL,
        "medium: n %d category %d nbytes %zu", n, m[0].category, m[0].nbytes);
  CHECK(!memcmp(m[0].buf, payload, 100), "medium payload in place");
  ((char *)m[0].buf)[0] = 'E'; /* writable */
  AM_SAFE(AM_ReplyI1(m[0].token, H_MREP, m[0].buf, m[0].nbytes, 6));
  n = drain_some(m, "the medium reply");
  CHECK(n == 1 && m[0].handler == H_MREP && m[0].nbytes == 100 && m[0].args[0] == 6,
        "medium reply: n %d handler %d nbytes %zu", n, m[0].handler, m[0].nbytes);
  CHECK(((char *)m[0].buf)[0] == 'E' && !memcmp((char *)m[0].buf + 1, payload + 1, 99),
        "echoed payload");

  PHASE("returned message");
  AM_SAFE(AM_Request1(A, 0, H_NONE, 1)); /* B has no handler 99 */
  n = drain_some(m, "the returned request");
  CHECK(n == 1 && m[0].ep == A && (m[0].flags & RAMP_MSG_RETURNED) &&
            (m[0].flags & RAMP_MSG_REQUEST),
        "returned: n %d ep %p flags %d", n, (void *)m[0].ep, m[0].flags);
  CHECK(m[0].status == EBADHANDLER && m[0].opcode == AM_REQUEST_M && m[0].handler == H_NONE,
        "status %s opcode %s handler %d", ct_statusname(m[0].status), ct_opname(m[0].opcode),
        m[0].handler);
  EXPECT_RC(AM_Reply0(m[0].token, H_REP), AM_ERR_RESOURCE);
  AM_SAFE(ramp_DrainRelease());

  PHASE("drain inside a handler; AM_Poll runs installed handlers");
  AM_SAFE(AM_Request0(A, 0, H_NESTED));
  {
    while (nested_calls == 0) {
      AM_SAFE(AM_Poll(eb));
    }
  }
  CHECK(nested_rc == AM_ERR_RESOURCE, "ramp_Drain inside a handler: %s",
        ct_errname(nested_rc));
  CHECK(c_handler_calls == 0, "no other handler ran (%d)", c_handler_calls);

  PHASE("teardown");
  poll_for_ms(eb, 50);
  AM_SAFE(ramp_Drain(eb, m, NMSG, &n));
  AM_SAFE(ramp_DrainRelease());
  AM_SAFE(AM_FreeBundle(eb));
  AM_SAFE(AM_Terminate());
  ct_note("PASS");
  return 0;
}
