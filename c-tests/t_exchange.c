/* t_exchange: two processes exchange short, medium and long (Xfer) requests and replies
 * with every argument count 0..16, simultaneously in both directions, plus a medium of
 * AM_MaxMedium() bytes and a long of AM_MaxLong() bytes, for several iterations.
 *
 * Checked: every argument (full 32 bits, negative values), payloads, 8-byte alignment of
 * medium buffers, buf == seg + offset for long messages, source buffers reusable as soon
 * as the call returns, the token interrogation calls inside handlers, and that every
 * handler runs exactly once per iteration. Meaningful under fault injection.
 * A burst of MIDS long requests of 40,000-85,000 bytes follows the big one each iteration (over
 * shared memory they go through the target's staging area, xfer_staged.rs, the sender's buffer
 * overwritten after each call): each lands whole at its offset, in order, once.
 */
#include "common.h"
#include "argmacros.h"

#define NARGS 17
#define SMALL 24
#define H_SREQ 10
#define H_SREP 30
#define H_MREQ 50
#define H_MREP 70
#define H_LREQ 90
#define H_LREP 110
#define H_BIGM_REQ 200
#define H_BIGM_REP 201
#define H_BIGL_REQ 202
#define H_BIGL_REP 203

#define BIG_REQ_OFF ((uintptr_t)4096)
#define BIG_REP_OFF (BIG_REQ_OFF + (uintptr_t)AM_MaxLong())
#define H_MIDL_REQ 204
#define H_MIDL_REP 205
#define MIDS 6
#define MID_LEN(k) ((size_t)40000 + (size_t)(k) * 9000)
#define MID_OFF(k) (BIG_REQ_OFF + (uintptr_t)(k) * 100000)

#define REQ_ARG(k) ((int32_t)(0xBABE7001u + (uint32_t)(k)))
/* reply args: alternate around INT32_MIN and INT32_MAX */
#define REP_ARG(k) ((int32_t)(((k) & 1) ? (0x80000000u + (uint32_t)(k)) : (0x7FFFFFF0u - (uint32_t)(k))))

enum { CAT_S = 0, CAT_M = 1, CAT_L = 2 };

static pair_t P;
static uint8_t *g_seg;
static size_t g_seglen;
/* T_EXCHANGE_ALLOCSEG=1: the segment from ramp_AllocSegment (a same-host peer's long
 * requests of 16 KiB or more are then one memcpy into it by the sender) */
static int g_allocseg;
static volatile int g_iter;           /* iteration both processes are in (see main loop) */
static int req_count[3][NARGS];       /* request handler runs, cumulative */
static int rep_count[3][NARGS];       /* reply handler runs, cumulative */
static int big_req_count[2], big_rep_count[2];
static int mid_req_count, mid_rep_count;
static unsigned mid_req_seen, mid_rep_seen; /* this iteration's k, one bit each */
static int replies_this_iter;

static uint8_t pat(int src, int n, int iter, int salt, size_t i) {
  return (uint8_t)(0x30 + src * 0x41 + n * 7 + (int)i * 3 + iter * 11 + salt * 0x55);
}

static uint8_t bigpat(int src, int iter, int salt, size_t i) {
  return (uint8_t)((i * 131u) ^ (i >> 8) ^ (i >> 16) ^ (uint32_t)(src * 17 + iter * 29 + salt * 0x6B));
}

/* token interrogation, as it must look for a message from the peer */
static void check_token(void *token, int handler, int cat, int is_req) {
  handler_t h = 0;
  ramp_category_t c = ramp_NumCategories;
  int r = -1;
  AM_SAFE(ramp_GetTokenInfo(token, &h, &c, &r));
  CHECK(h == (handler_t)handler, "GetTokenInfo handler %d, expected %d", (int)h, handler);
  CHECK((int)c == cat, "GetTokenInfo category %d, expected %d (handler %d)", (int)c, cat, handler);
  CHECK(!!r == !!is_req, "GetTokenInfo is_req %d, expected %d (handler %d)", r, is_req, handler);
  en_t src;
  memset(&src, 0xA5, sizeof src);
  AM_SAFE(AM_GetSourceEndpoint(token, &src));
  CHECK(ramp_enEqual(src, P.name[P.peer]), "AM_GetSourceEndpoint gave %s, expected the peer %s",
        en_str(src), en_str(P.name[P.peer]));
  tag_t t = 0;
  AM_SAFE(AM_GetMsgTag(token, &t));
  CHECK(t == P.tag[P.rank], "AM_GetMsgTag gave 0x%016" PRIx64 ", expected 0x%016" PRIx64,
        (uint64_t)t, (uint64_t)P.tag[P.rank]);
  int id = -1;
  AM_SAFE(ramp_GetSourceId(token, &id));
  CHECK(id == P.peer, "ramp_GetSourceId gave %d, expected %d", id, P.peer);
  ep_t dest = NULL;
  AM_SAFE(AM_GetDestEndpoint(token, &dest));
  CHECK(dest == P.ep, "AM_GetDestEndpoint gave %p, expected %p", (void *)dest, (void *)P.ep);
}

static void check_args(const char *what, int n, const int32_t *args, int is_req) {
  for (int k = 0; k < n; k++) {
    int32_t want = is_req ? REQ_ARG(k) : REP_ARG(k);
    CHECK(args[k] == want, "%s with %d args: arg %d = 0x%08" PRIx32 " (%" PRId32 "), expected 0x%08" PRIx32
          " (%" PRId32 ")", what, n, k, (uint32_t)args[k], args[k], (uint32_t)want, want);
  }
}

/* ------------------------------------------------------------------------------------ */
/* replies with a run-time argument count                                               */

#define CASE_RS(N) case N: rc = APPLY(AM_Reply##N, (token, H_SREP + N VALS_##N(REP_ARG))); break;
#define CASE_RM(N) case N: rc = APPLY(AM_ReplyI##N, (token, H_MREP + N, buf, nbytes VALS_##N(REP_ARG))); break;
#define CASE_RL(N) case N: rc = APPLY(AM_ReplyXfer##N, (token, off, H_LREP + N, buf, nbytes VALS_##N(REP_ARG))); break;

static void reply_short(void *token, int n) {
  int rc = -1;
  switch (n) { FOR_EACH_N(CASE_RS) default: FAIL("bad n"); }
  CHECK(rc == AM_OK, "AM_Reply%d returned %s", n, ct_errname(rc));
}
static void reply_medium(void *token, void *buf, size_t nbytes, int n) {
  int rc = -1;
  switch (n) { FOR_EACH_N(CASE_RM) default: FAIL("bad n"); }
  CHECK(rc == AM_OK, "AM_ReplyI%d returned %s", n, ct_errname(rc));
}
static void reply_long(void *token, uintptr_t off, void *buf, size_t nbytes, int n) {
  int rc = -1;
  switch (n) { FOR_EACH_N(CASE_RL) default: FAIL("bad n"); }
  CHECK(rc == AM_OK, "AM_ReplyXfer%d returned %s", n, ct_errname(rc));
}

/* ------------------------------------------------------------------------------------ */
/* handler bodies                                                                        */

static void on_sreq(void *token, int n, const int32_t *args) {
  check_token(token, H_SREQ + n, ramp_Short, 1);
  check_args("short request", n, args, 1);
  req_count[CAT_S][n]++;
  reply_short(token, n);
}

static void on_srep(void *token, int n, const int32_t *args) {
  check_token(token, H_SREP + n, ramp_Short, 0);
  check_args("short reply", n, args, 0);
  rep_count[CAT_S][n]++;
  replies_this_iter++;
}

static void on_mreq(void *token, void *buf, size_t nbytes, int n, const int32_t *args) {
  check_token(token, H_MREQ + n, ramp_Medium, 1);
  check_args("medium request", n, args, 1);
  CHECK(((uintptr_t)buf & 7) == 0, "medium request buffer %p not 8-byte aligned", buf);
  CHECK(nbytes == SMALL, "medium request nbytes %zu, expected %d", nbytes, SMALL);
  uint8_t *b = (uint8_t *)buf;
  for (size_t i = 0; i < SMALL; i++) {
    uint8_t want = pat(P.peer, n, g_iter, 1, i);
    CHECK(b[i] == want, "medium request (%d args) payload byte %zu = 0x%02x, expected 0x%02x", n, i, b[i], want);
  }
  for (size_t i = 0; i < SMALL; i++) b[i] ^= 0x5A; /* modify in place, send it back */
  req_count[CAT_M][n]++;
  reply_medium(token, buf, nbytes, n);
  memset(buf, 0xCC, nbytes); /* the reply must have copied it */
}

static void on_mrep(void *token, void *buf, size_t nbytes, int n, const int32_t *args) {
  check_token(token, H_MREP + n, ramp_Medium, 0);
  check_args("medium reply", n, args, 0);
  CHECK(((uintptr_t)buf & 7) == 0, "medium reply buffer %p not 8-byte aligned", buf);
  CHECK(nbytes == SMALL, "medium reply nbytes %zu, expected %d", nbytes, SMALL);
  const uint8_t *b = (const uint8_t *)buf;
  for (size_t i = 0; i < SMALL; i++) {
    uint8_t want = (uint8_t)(pat(P.rank, n, g_iter, 1, i) ^ 0x5A);
    CHECK(b[i] == want, "medium reply (%d args) payload byte %zu = 0x%02x, expected 0x%02x", n, i, b[i], want);
  }
  rep_count[CAT_M][n]++;
  replies_this_iter++;
}

static void on_lreq(void *token, void *buf, size_t nbytes, int n, const int32_t *args) {
  check_token(token, H_LREQ + n, ramp_Long, 1);
  check_args("long request", n, args, 1);
  CHECK(buf == g_seg + (size_t)SMALL * n, "long request buf %p, expected seg+%d = %p", buf, SMALL * n,
        (void *)(g_seg + SMALL * n));
  CHECK(nbytes == SMALL, "long request nbytes %zu, expected %d", nbytes, SMALL);
  uint8_t *b = (uint8_t *)buf;
  for (size_t i = 0; i < SMALL; i++) {
    uint8_t want = pat(P.peer, n, g_iter, 2, i);
    CHECK(b[i] == want, "long request (%d args) byte %zu = 0x%02x, expected 0x%02x", n, i, b[i], want);
  }
  for (size_t i = 0; i < SMALL; i++) b[i] ^= 0xA5;
  req_count[CAT_L][n]++;
  reply_long(token, (uintptr_t)(NARGS + n) * SMALL, buf, nbytes, n);
  memset(buf, 0xCC, nbytes);
}

static void on_lrep(void *token, void *buf, size_t nbytes, int n, const int32_t *args) {
  check_token(token, H_LREP + n, ramp_Long, 0);
  check_args("long reply", n, args, 0);
  uint8_t *want_buf = g_seg + (size_t)(NARGS + n) * SMALL;
  CHECK(buf == want_buf, "long reply buf %p, expected seg+%d = %p", buf, (NARGS + n) * SMALL, (void *)want_buf);
  CHECK(nbytes == SMALL, "long reply nbytes %zu, expected %d", nbytes, SMALL);
  const uint8_t *b = (const uint8_t *)buf;
  for (size_t i = 0; i < SMALL; i++) {
    uint8_t want = (uint8_t)(pat(P.rank, n, g_iter, 2, i) ^ 0xA5);
    CHECK(b[i] == want, "long reply (%d args) byte %zu = 0x%02x, expected 0x%02x", n, i, b[i], want);
  }
  rep_count[CAT_L][n]++;
  replies_this_iter++;
}

/* the 6 x 17 handler functions, with their exact prototypes */
#define DEF_HANDLERS(N)                                                                       \
  static void sreq_##N(void *token PARAMS_##N) {                                              \
    int32_t args[NARGS] = {0};                                                                \
    STORE_##N(args) on_sreq(token, N, args);                                                  \
  }                                                                                           \
  static void srep_##N(void *token PARAMS_##N) {                                              \
    int32_t args[NARGS] = {0};                                                                \
    STORE_##N(args) on_srep(token, N, args);                                                  \
  }                                                                                           \
  static void mreq_##N(void *token, void *buf, size_t nbytes PARAMS_##N) {                    \
    int32_t args[NARGS] = {0};                                                                \
    STORE_##N(args) on_mreq(token, buf, nbytes, N, args);                                     \
  }                                                                                           \
  static void mrep_##N(void *token, void *buf, size_t nbytes PARAMS_##N) {                    \
    int32_t args[NARGS] = {0};                                                                \
    STORE_##N(args) on_mrep(token, buf, nbytes, N, args);                                     \
  }                                                                                           \
  static void lreq_##N(void *token, void *buf, size_t nbytes PARAMS_##N) {                    \
    int32_t args[NARGS] = {0};                                                                \
    STORE_##N(args) on_lreq(token, buf, nbytes, N, args);                                     \
  }                                                                                           \
  static void lrep_##N(void *token, void *buf, size_t nbytes PARAMS_##N) {                    \
    int32_t args[NARGS] = {0};                                                                \
    STORE_##N(args) on_lrep(token, buf, nbytes, N, args);                                     \
  }
FOR_EACH_N(DEF_HANDLERS)

#define REG_HANDLERS(N)                                   \
  AM_SAFE(AM_SetHandler(ep, H_SREQ + N, sreq_##N));       \
  AM_SAFE(AM_SetHandler(ep, H_SREP + N, srep_##N));       \
  AM_SAFE(AM_SetHandler(ep, H_MREQ + N, mreq_##N));       \
  AM_SAFE(AM_SetHandler(ep, H_MREP + N, mrep_##N));       \
  AM_SAFE(AM_SetHandler(ep, H_LREQ + N, lreq_##N));       \
  AM_SAFE(AM_SetHandler(ep, H_LREP + N, lrep_##N));

/* ------------------------------------------------------------------------------------ */
/* maximum-size messages                                                                 */

static void bigm_req(void *token, void *buf, size_t nbytes, int32_t iter) {
  check_token(token, H_BIGM_REQ, ramp_Medium, 1);
  CHECK(iter == g_iter, "big medium request arg %d, expected iteration %d", (int)iter, (int)g_iter);
  CHECK(((uintptr_t)buf & 7) == 0, "big medium request buffer %p not 8-byte aligned", buf);
  CHECK(nbytes == (size_t)AM_MaxMedium(), "big medium request nbytes %zu, expected %zu", nbytes,
        (size_t)AM_MaxMedium());
  uint8_t *b = (uint8_t *)buf;
  for (size_t i = 0; i < nbytes; i++) {
    uint8_t want = bigpat(P.peer, g_iter, 1, i);
    if (b[i] != want) FAIL("big medium request byte %zu = 0x%02x, expected 0x%02x", i, b[i], want);
  }
  for (size_t i = 0; i < nbytes; i++) b[i] ^= 0x3C;
  big_req_count[0]++;
  AM_SAFE(AM_ReplyI1(token, H_BIGM_REP, buf, nbytes, iter));
  memset(buf, 0xCC, nbytes);
}

static void bigm_rep(void *token, void *buf, size_t nbytes, int32_t iter) {
  check_token(token, H_BIGM_REP, ramp_Medium, 0);
  CHECK(iter == g_iter, "big medium reply arg %d, expected iteration %d", (int)iter, (int)g_iter);
  CHECK(((uintptr_t)buf & 7) == 0, "big medium reply buffer %p not 8-byte aligned", buf);
  CHECK(nbytes == (size_t)AM_MaxMedium(), "big medium reply nbytes %zu", nbytes);
  const uint8_t *b = (const uint8_t *)buf;
  for (size_t i = 0; i < nbytes; i++) {
    uint8_t want = (uint8_t)(bigpat(P.rank, g_iter, 1, i) ^ 0x3C);
    if (b[i] != want) FAIL("big medium reply byte %zu = 0x%02x, expected 0x%02x", i, b[i], want);
  }
  big_rep_count[0]++;
  replies_this_iter++;
}

static void bigl_req(void *token, void *buf, size_t nbytes, int32_t iter) {
  check_token(token, H_BIGL_REQ, ramp_Long, 1);
  CHECK(iter == g_iter, "big long request arg %d, expected iteration %d", (int)iter, (int)g_iter);
  CHECK(buf == g_seg + BIG_REQ_OFF, "big long request buf %p, expected seg+%lu", buf, (unsigned long)BIG_REQ_OFF);
  CHECK(nbytes == (size_t)AM_MaxLong(), "big long request nbytes %zu, expected %zu", nbytes, (size_t)AM_MaxLong());
  uint8_t *b = (uint8_t *)buf;
  for (size_t i = 0; i < nbytes; i++) {
    uint8_t want = bigpat(P.peer, g_iter, 2, i);
    if (b[i] != want) FAIL("big long request byte %zu = 0x%02x, expected 0x%02x", i, b[i], want);
  }
  for (size_t i = 0; i < nbytes; i++) b[i] ^= 0xC3;
  big_req_count[1]++;
  AM_SAFE(AM_ReplyXfer1(token, BIG_REP_OFF, H_BIGL_REP, buf, nbytes, iter));
  memset(buf, 0xCC, nbytes);
}

static void bigl_rep(void *token, void *buf, size_t nbytes, int32_t iter) {
  check_token(token, H_BIGL_REP, ramp_Long, 0);
  CHECK(iter == g_iter, "big long reply arg %d, expected iteration %d", (int)iter, (int)g_iter);
  CHECK(buf == g_seg + BIG_REP_OFF, "big long reply buf %p, expected seg+%lu", buf, (unsigned long)BIG_REP_OFF);
  CHECK(nbytes == (size_t)AM_MaxLong(), "big long reply nbytes %zu", nbytes);
  const uint8_t *b = (const uint8_t *)buf;
  for (size_t i = 0; i < nbytes; i++) {
    uint8_t want = (uint8_t)(bigpat(P.rank, g_iter, 2, i) ^ 0xC3);
    if (b[i] != want) FAIL("big long reply byte %zu = 0x%02x, expected 0x%02x", i, b[i], want);
  }
  big_rep_count[1]++;
  replies_this_iter++;
}

/* the burst's k-th request of this iteration: once, whole, at its offset (AM-2 orders
 * nothing: under loss they may come in any order) */
static void midl_req(void *token, void *buf, size_t nbytes, int32_t iter, int32_t k) {
  check_token(token, H_MIDL_REQ, ramp_Long, 1);
  CHECK(iter == g_iter, "mid long request arg %d, expected iteration %d", (int)iter, (int)g_iter);
  CHECK(k >= 0 && k < MIDS && !(mid_req_seen >> k & 1), "mid long request %d: out of range or twice", (int)k);
  mid_req_seen |= 1u << k;
  CHECK(buf == g_seg + MID_OFF(k), "mid long request %d buf %p, expected seg+%lu", (int)k, buf,
        (unsigned long)MID_OFF(k));
  CHECK(nbytes == MID_LEN(k), "mid long request %d nbytes %zu, expected %zu", (int)k, nbytes, MID_LEN(k));
  const uint8_t *b = (const uint8_t *)buf;
  for (size_t i = 0; i < nbytes; i++) {
    uint8_t want = bigpat(P.peer, g_iter, 3 + (int)k, i);
    if (b[i] != want) FAIL("mid long request %d byte %zu = 0x%02x, expected 0x%02x", (int)k, i, b[i], want);
  }
  mid_req_count++;
  AM_SAFE(AM_Reply1(token, H_MIDL_REP, k));
}

static void midl_rep(void *token, int32_t k) {
  check_token(token, H_MIDL_REP, ramp_Short, 0);
  CHECK(k >= 0 && k < MIDS && !(mid_rep_seen >> k & 1), "mid long reply %d: out of range or twice", (int)k);
  mid_rep_seen |= 1u << k;
  mid_rep_count++;
  replies_this_iter++;
}

static void returned_handler(int status, op_t opcode, void *token) {
  (void)token;
  FAIL("unexpected returned message: status %d (%s), opcode %d (%s)", status, ct_statusname(status),
       (int)opcode, ct_opname((int)opcode));
}

static void setup(pair_t *p, void *arg) {
  (void)arg;
  ep_t ep = p->ep;
  AM_SAFE(AM_SetHandler(ep, 0, returned_handler));
  FOR_EACH_N(REG_HANDLERS)
  AM_SAFE(AM_SetHandler(ep, H_BIGM_REQ, bigm_req));
  AM_SAFE(AM_SetHandler(ep, H_BIGM_REP, bigm_rep));
  AM_SAFE(AM_SetHandler(ep, H_BIGL_REQ, bigl_req));
  AM_SAFE(AM_SetHandler(ep, H_BIGL_REP, bigl_rep));
  AM_SAFE(AM_SetHandler(ep, H_MIDL_REQ, midl_req));
  AM_SAFE(AM_SetHandler(ep, H_MIDL_REP, midl_rep));
  if (g_allocseg) {
    void *b = NULL;
    AM_SAFE(ramp_AllocSegment(ep, g_seglen, &b));
    CHECK(b != NULL, "ramp_AllocSegment gave no address");
    free(g_seg);
    g_seg = b;
  } else {
    AM_SAFE(AM_SetSeg(ep, g_seg, g_seglen));
  }
}

/* ------------------------------------------------------------------------------------ */

#define SEND_N(N)                                                                             \
  case N:                                                                                     \
    AM_SAFE(APPLY(AM_Request##N, (ep, dest, H_SREQ + N VALS_##N(REQ_ARG))));                           \
    for (size_t i = 0; i < SMALL; i++) mbuf[i] = pat(P.rank, N, iter, 1, i);                 \
    AM_SAFE(APPLY(AM_RequestI##N, (ep, dest, H_MREQ + N, mbuf, SMALL VALS_##N(REQ_ARG))));             \
    memset(mbuf, 0xEE, sizeof mbuf);                                                          \
    for (size_t i = 0; i < SMALL; i++) lbuf[i] = pat(P.rank, N, iter, 2, i);                  \
    AM_SAFE(APPLY(AM_RequestXfer##N, (ep, dest, (uintptr_t)SMALL * N, H_LREQ + N, lbuf, SMALL \
                                      VALS_##N(REQ_ARG))));                                   \
    memset(lbuf, 0xEE, sizeof lbuf);                                                          \
    break;

static void send_all(int iter, uint8_t *bigsrc) {
  ep_t ep = P.ep;
  uint32_t dest = (uint32_t)P.peer;
  uint8_t mbuf[SMALL], lbuf[SMALL];
  /* the maximum-size ones first, so they overlap with the small traffic */
  size_t mm = (size_t)AM_MaxMedium();
  for (size_t i = 0; i < mm; i++) bigsrc[i] = bigpat(P.rank, iter, 1, i);
  AM_SAFE(AM_RequestI1(ep, dest, H_BIGM_REQ, bigsrc, mm, iter));
  memset(bigsrc, 0xEE, mm);
  size_t ml = (size_t)AM_MaxLong();
  for (size_t i = 0; i < ml; i++) bigsrc[i] = bigpat(P.rank, iter, 2, i);
  AM_SAFE(AM_RequestXfer1(ep, dest, BIG_REQ_OFF, H_BIGL_REQ, bigsrc, ml, iter));
  memset(bigsrc, 0xEE, ml);
  for (int k = 0; k < MIDS; k++) {
    for (size_t i = 0; i < MID_LEN(k); i++) bigsrc[i] = bigpat(P.rank, iter, 3 + k, i);
    AM_SAFE(AM_RequestXfer2(ep, dest, MID_OFF(k), H_MIDL_REQ, bigsrc, MID_LEN(k), iter, k));
    memset(bigsrc, 0xEE, MID_LEN(k)); /* free as soon as the call returns */
  }
  for (int n = 0; n < NARGS; n++) {
    switch (n) {
      FOR_EACH_N(SEND_N)
      default: FAIL("bad n");
    }
  }
}

static void check_counts(int expect, const char *when) {
  static const char *cn[3] = {"short", "medium", "long"};
  for (int c = 0; c < 3; c++)
    for (int n = 0; n < NARGS; n++) {
      CHECK(req_count[c][n] == expect, "%s: %s request handler with %d args ran %d times, expected %d", when,
            cn[c], n, req_count[c][n], expect);
      CHECK(rep_count[c][n] == expect, "%s: %s reply handler with %d args ran %d times, expected %d", when,
            cn[c], n, rep_count[c][n], expect);
    }
  CHECK(mid_req_count == expect * MIDS, "%s: mid long request handler ran %d times, expected %d", when,
        mid_req_count, expect * MIDS);
  CHECK(mid_rep_count == expect * MIDS, "%s: mid long reply handler ran %d times, expected %d", when,
        mid_rep_count, expect * MIDS);
  for (int b = 0; b < 2; b++) {
    CHECK(big_req_count[b] == expect, "%s: max-size %s request handler ran %d times, expected %d", when,
          b ? "long" : "medium", big_req_count[b], expect);
    CHECK(big_rep_count[b] == expect, "%s: max-size %s reply handler ran %d times, expected %d", when,
          b ? "long" : "medium", big_rep_count[b], expect);
  }
}

int main(void) {
  ct_init("t_exchange", CT_WATCHDOG_SECS);
  int iters = (int)env_long("RAMP_CTEST_ITERS", 6);
  int depth = (int)env_long("RAMP_CTEST_DEPTH", 16);
  CHECK(AM_MaxShort() == 16, "AM_MaxShort() = %d", (int)AM_MaxShort());
  CHECK((uint32_t)REQ_ARG(0) == 0xBABE7001u && REQ_ARG(0) < 0, "argument constant");
  CHECK(AM_MaxMedium() >= 65000, "AM_MaxMedium() = %ld", (long)AM_MaxMedium());
  CHECK(AM_MaxLong() >= 1048576, "AM_MaxLong() = %ld", (long)AM_MaxLong());

  const char *allocseg = getenv("T_EXCHANGE_ALLOCSEG");
  g_allocseg = allocseg && allocseg[0] == '1';
  g_seglen = (size_t)BIG_REP_OFF + (size_t)AM_MaxLong();
  g_seg = malloc(g_seglen);
  uint8_t *bigsrc = malloc((size_t)AM_MaxLong());
  CHECK(g_seg && bigsrc, "malloc");
  memset(g_seg, 0, g_seglen);

  PHASE("setup");
  spawn_pair(&P, AM_SEQ, depth, setup, NULL);
  int expected_replies = 3 * NARGS + 2 + MIDS;
  double t0 = now_sec();
  for (int iter = 0; iter < iters; iter++) {
    PHASE("sending");
    replies_this_iter = 0;
    send_all(iter, bigsrc);
    PHASE("waiting for replies");
    POLL_UNTIL(P.eb, replies_this_iter >= expected_replies, 30.0,
               "iteration %d: only %d of %d replies arrived", iter, replies_this_iter, expected_replies);
    PHASE("iteration barrier");
    pair_barrier(&P); /* both have all their replies: every request of this iteration was handled */
    CHECK(replies_this_iter == expected_replies, "iteration %d: %d replies, expected %d", iter,
          replies_this_iter, expected_replies);
    check_counts(iter + 1, "after iteration");
    g_iter = iter + 1;
    mid_req_seen = mid_rep_seen = 0;
    pair_barrier(&P); /* nobody sends for the next iteration before both switched g_iter */
  }
  double el = now_sec() - t0;
  PHASE("linger");
  pair_barrier(&P);
  poll_for_ms(P.eb, 300);
  check_counts(iters, "after linger (late duplicates?)");
  ct_note("%d iterations x %d messages each way in %.2f s", iters, expected_replies, el);
  pair_fault_report(&P);
  pair_finish(&P, 50);
  printf("t_exchange: OK\n");
  if (!g_allocseg)
    free(g_seg);
  free(bigsrc);
  return 0;
}
