/* t_loopback: requests to the endpoint's own name (spec §2.11 "Loopback").
 *
 * The request handler must run synchronously inside the AM_Request* call, and a reply
 * from it must run the reply handler synchronously inside AM_Reply*; loopback Xfer copies
 * with memmove semantics (overlapping source and destination); a loopback Xfer past the
 * segment end returns AM_ERR_BAD_ARG and runs nothing; loopback requests need no credit
 * or auto-reply (many unreplied loopback requests with depth 1 must not block).
 */
#include "common.h"
#include "argmacros.h"

#define H_SREQ 5
#define H_SREP 6
#define H_MREQ 7
#define H_MREP 8
#define H_LREQ 9
#define H_LREP 10
#define H_NOREPLY 11
#define H_BOUNCE 12
#define H_BOUNCE_REP 13

static ep_t g_ep;
static en_t g_name;
static tag_t g_tag = 0x0123456789ABCDEFULL;
static uint8_t g_seg[4096];

static int in_request_call;   /* set around the AM_Request* call under test */
static int in_reply_call;     /* set around AM_Reply* inside the request handler */
static int req_ran, rep_ran, noreply_ran;
static int rep_ran_during_reply_call;
static int req_ran_during_request_call;
static int reply_rc;

static void check_token(void *token, int handler, int cat, int is_req) {
  handler_t h = 0;
  ramp_category_t c = ramp_NumCategories;
  int r = -1;
  AM_SAFE(ramp_GetTokenInfo(token, &h, &c, &r));
  CHECK(h == (handler_t)handler && (int)c == cat && !!r == !!is_req,
        "GetTokenInfo gave (handler %d, cat %d, is_req %d), expected (%d, %d, %d)", (int)h, (int)c, r, handler,
        cat, is_req);
  en_t src;
  AM_SAFE(AM_GetSourceEndpoint(token, &src));
  CHECK(ramp_enEqual(src, g_name), "loopback source endpoint %s is not our own name %s", en_str(src),
        en_str(g_name));
  ep_t d = NULL;
  AM_SAFE(AM_GetDestEndpoint(token, &d));
  CHECK(d == g_ep, "AM_GetDestEndpoint gave %p, expected %p", (void *)d, (void *)g_ep);
  tag_t t = 0;
  AM_SAFE(AM_GetMsgTag(token, &t));
  CHECK(t == g_tag, "AM_GetMsgTag gave 0x%" PRIx64 ", expected 0x%" PRIx64, (uint64_t)t, (uint64_t)g_tag);
  int id = -1;
  AM_SAFE(ramp_GetSourceId(token, &id));
  CHECK(id == 0, "ramp_GetSourceId on a loopback message gave %d, expected 0 (the index used)", id);
}

static void sreq(void *token, int32_t a, int32_t b) {
  check_token(token, H_SREQ, ramp_Short, 1);
  int nargs = -1;
  AM_SAFE(ramp_GetTokenArgCount(token, &nargs));
  CHECK(nargs == 2, "ramp_GetTokenArgCount gave %d, expected 2", nargs);
  EXPECT_RC(ramp_GetTokenArgCount(token, NULL), AM_ERR_BAD_ARG);
  CHECK(a == (int32_t)0xBABE7001u && b == -2, "short request args %d %d", (int)a, (int)b);
  req_ran++;
  req_ran_during_request_call = in_request_call;
  in_reply_call = 1;
  reply_rc = AM_Reply1(token, H_SREP, 0x7FFFFFFF);
  in_reply_call = 0;
}

static void srep(void *token, int32_t a) {
  check_token(token, H_SREP, ramp_Short, 0);
  CHECK(a == 0x7FFFFFFF, "short reply arg %d", (int)a);
  rep_ran++;
  rep_ran_during_reply_call = in_reply_call;
}

static void mreq(void *token, void *buf, size_t nbytes, int32_t a) {
  check_token(token, H_MREQ, ramp_Medium, 1);
  CHECK(nbytes == 100 && a == 42, "medium request nbytes %zu arg %d", nbytes, (int)a);
  CHECK(((uintptr_t)buf & 7) == 0, "medium buffer %p not 8-byte aligned", buf);
  uint8_t *b = buf;
  for (int i = 0; i < 100; i++) CHECK(b[i] == (uint8_t)(i * 3 + 1), "medium payload byte %d = %d", i, b[i]);
  req_ran++;
  req_ran_during_request_call = in_request_call;
  for (int i = 0; i < 100; i++) b[i] ^= 0xFF;
  in_reply_call = 1;
  reply_rc = AM_ReplyI0(token, H_MREP, buf, nbytes);
  in_reply_call = 0;
  memset(buf, 0, nbytes);
}

static void mrep(void *token, void *buf, size_t nbytes) {
  check_token(token, H_MREP, ramp_Medium, 0);
  CHECK(nbytes == 100, "medium reply nbytes %zu", nbytes);
  const uint8_t *b = buf;
  for (int i = 0; i < 100; i++) {
    uint8_t want = (uint8_t)((i * 3 + 1) ^ 0xFF);
    CHECK(b[i] == want, "medium reply byte %d = %d", i, b[i]);
  }
  rep_ran++;
  rep_ran_during_reply_call = in_reply_call;
}

static void *g_lreq_buf;
static size_t g_lreq_n;
static void lreq(void *token, void *buf, size_t nbytes, int32_t a) {
  check_token(token, H_LREQ, ramp_Long, 1);
  CHECK(a == 7, "long arg %d", (int)a);
  g_lreq_buf = buf;
  g_lreq_n = nbytes;
  req_ran++;
  req_ran_during_request_call = in_request_call;
}

static void noreply(void *token, int32_t i) {
  (void)token;
  CHECK(i == noreply_ran, "no-reply handler arg %d, expected %d", (int)i, noreply_ran);
  noreply_ran++;
}

/* testbounce with one process: the handler replies from its own segment onto itself */
static void bounce(void *token, void *buf, size_t nbytes, int32_t a) {
  check_token(token, H_BOUNCE, ramp_Long, 1);
  CHECK(buf == g_seg + 100 && nbytes == 1000 && a == 666, "bounce buf %p nbytes %zu arg %d", buf, nbytes, (int)a);
  uint8_t *b = buf;
  for (size_t i = 0; i < nbytes; i++) CHECK(b[i] == (uint8_t)(i ^ 0x55), "bounce request byte %zu", i);
  for (size_t i = 0; i < nbytes; i++) b[i] = (uint8_t)(i * 7);
  req_ran++;
  in_reply_call = 1;
  reply_rc = AM_ReplyXfer1(token, 100, H_BOUNCE_REP, buf, nbytes, 666);
  in_reply_call = 0;
}
static void bounce_rep(void *token, void *buf, size_t nbytes, int32_t a) {
  check_token(token, H_BOUNCE_REP, ramp_Long, 0);
  CHECK(buf == g_seg + 100 && nbytes == 1000 && a == 666, "bounce reply buf %p nbytes %zu arg %d", buf, nbytes,
        (int)a);
  uint8_t *b = buf;
  for (size_t i = 0; i < nbytes; i++) CHECK(b[i] == (uint8_t)(i * 7), "bounce reply byte %zu = %d", i, b[i]);
  rep_ran++;
  rep_ran_during_reply_call = in_reply_call;
}

/* ---- the argument-vector and va_list entry points, with 16 arguments ---- */
#define H_A16_S 20
#define H_A16_M 21
#define H_A16_L 22
#define H_A16_REP_S 23
#define H_A16_REP_M 24
#define H_A16_REP_L 25
#define QARG(k) ((int32_t)(0xA5A50000u ^ ((uint32_t)(k) * 0x01010101u)))
#define PARG(k) ((int32_t)(0x5A5A0000u + (uint32_t)(k) * 0x10000001u))

static int a16_mode; /* how the handler replies: 0 Argv, 1 VA, 2 variadic */
static int a16_ran, a16_rep_ran;
static uint8_t a16_payload[64];

static int reply_va(void *token, int cat, handler_t h, void *src, size_t n, uintptr_t off, int numargs, ...) {
  va_list ap;
  va_start(ap, numargs);
  int rc;
  if (cat == 0) rc = ramp_ReplyVA(token, h, numargs, ap);
  else if (cat == 1) rc = ramp_ReplyIVA(token, h, src, n, numargs, ap);
  else rc = ramp_ReplyXferVA(token, h, src, n, off, numargs, ap);
  va_end(ap);
  return rc;
}

static int request_va(ep_t ep, int cat, handler_t h, void *src, size_t n, uintptr_t off, int numargs, ...) {
  va_list ap;
  va_start(ap, numargs);
  int rc;
  if (cat == 0) rc = ramp_RequestVA(ep, 0, h, numargs, ap);
  else if (cat == 1) rc = ramp_RequestIVA(ep, 0, h, src, n, numargs, ap);
  else rc = ramp_RequestXferVA(ep, 0, h, src, n, off, 0, numargs, ap);
  va_end(ap);
  return rc;
}

static void check16(const int32_t *a, int req, const char *what) {
  for (int k = 0; k < 16; k++) {
    int32_t want = req ? QARG(k) : PARG(k);
    CHECK(a[k] == want, "%s: arg %d = 0x%08" PRIx32 ", expected 0x%08" PRIx32, what, k, (uint32_t)a[k],
          (uint32_t)want);
  }
}

static void a16_reply(void *token, int cat, void *buf, size_t n) {
  handler_t h = (handler_t)(H_A16_REP_S + cat);
  uintptr_t off = 2048;
  int rc;
  if (a16_mode == 0) {
    int32_t v[16] = {0};
    for (int k = 0; k < 16; k++) v[k] = PARG(k);
    rc = ramp_ReplyArgv(token, h, cat, cat ? buf : NULL, cat ? n : 0, cat == 2 ? off : 0, 16, v);
  } else if (a16_mode == 1) {
    rc = reply_va(token, cat, h, buf, n, off, 16 VALS_16(PARG));
  } else if (cat == 0) {
    rc = ramp_Reply(token, h, 16 VALS_16(PARG));
  } else if (cat == 1) {
    rc = ramp_ReplyI(token, h, buf, n, 16 VALS_16(PARG));
  } else {
    rc = ramp_ReplyXfer(token, h, buf, n, off, 16 VALS_16(PARG));
  }
  CHECK(rc == AM_OK, "16-arg reply (mode %d, category %d) returned %s", a16_mode, cat, ct_errname(rc));
}

static void a16_s(void *token PARAMS_16) {
  int32_t a[16];
  STORE_16(a)
  check_token(token, H_A16_S, ramp_Short, 1);
  {
    int nargs = -1;
    AM_SAFE(ramp_GetTokenArgCount(token, &nargs));
    CHECK(nargs == 16, "ramp_GetTokenArgCount gave %d, expected 16", nargs);
  }
  check16(a, 1, "16-arg short request");
  a16_ran++;
  a16_reply(token, 0, NULL, 0);
}
static void a16_m(void *token, void *buf, size_t n PARAMS_16) {
  int32_t a[16];
  STORE_16(a)
  check_token(token, H_A16_M, ramp_Medium, 1);
  check16(a, 1, "16-arg medium request");
  CHECK(n == sizeof a16_payload && memcmp(buf, a16_payload, n) == 0, "16-arg medium payload");
  a16_ran++;
  a16_reply(token, 1, buf, n);
}
static void a16_l(void *token, void *buf, size_t n PARAMS_16) {
  int32_t a[16];
  STORE_16(a)
  check_token(token, H_A16_L, ramp_Long, 1);
  check16(a, 1, "16-arg long request");
  CHECK(buf == g_seg + 1024 && n == sizeof a16_payload && memcmp(buf, a16_payload, n) == 0, "16-arg long payload");
  a16_ran++;
  a16_reply(token, 2, buf, n);
}
static void a16_rep_s(void *token PARAMS_16) {
  int32_t a[16];
  STORE_16(a)
  check_token(token, H_A16_REP_S, ramp_Short, 0);
  check16(a, 0, "16-arg short reply");
  a16_rep_ran++;
}
static void a16_rep_m(void *token, void *buf, size_t n PARAMS_16) {
  int32_t a[16];
  STORE_16(a)
  check_token(token, H_A16_REP_M, ramp_Medium, 0);
  check16(a, 0, "16-arg medium reply");
  CHECK(n == sizeof a16_payload && memcmp(buf, a16_payload, n) == 0, "16-arg medium reply payload");
  a16_rep_ran++;
}
static void a16_rep_l(void *token, void *buf, size_t n PARAMS_16) {
  int32_t a[16];
  STORE_16(a)
  check_token(token, H_A16_REP_L, ramp_Long, 0);
  check16(a, 0, "16-arg long reply");
  CHECK(buf == g_seg + 2048 && n == sizeof a16_payload && memcmp(buf, a16_payload, n) == 0,
        "16-arg long reply payload");
  a16_rep_ran++;
}

static void test_argv_and_va_forms(void) {
  for (size_t i = 0; i < sizeof a16_payload; i++) a16_payload[i] = (uint8_t)(i * 5 + 3);
  int32_t v[16];
  for (int k = 0; k < 16; k++) v[k] = QARG(k);
  const char *how[3] = {"ramp_RequestArgv", "ramp_Request*VA", "variadic ramp_Request*"};
  for (int send_mode = 0; send_mode < 3; send_mode++)
    for (int cat = 0; cat < 3; cat++) {
      a16_mode = (send_mode + cat) % 3;
      a16_ran = a16_rep_ran = 0;
      handler_t h = (handler_t)(H_A16_S + cat);
      void *src = cat ? a16_payload : NULL;
      size_t n = cat ? sizeof a16_payload : 0;
      uintptr_t off = cat == 2 ? 1024 : 0;
      int rc;
      if (send_mode == 0)
        rc = ramp_RequestArgv(g_ep, 0, h, cat, src, n, off, 0, 16, v);
      else if (send_mode == 1)
        rc = request_va(g_ep, cat, h, src, n, off, 16 VALS_16(QARG));
      else if (cat == 0)
        rc = ramp_Request(g_ep, 0, h, 16 VALS_16(QARG));
      else if (cat == 1)
        rc = ramp_RequestI(g_ep, 0, h, src, n, 16 VALS_16(QARG));
      else
        rc = ramp_RequestXfer(g_ep, 0, h, src, n, off, 0, 16 VALS_16(QARG));
      CHECK(rc == AM_OK, "%s (category %d) returned %s", how[send_mode], cat, ct_errname(rc));
      CHECK(a16_ran == 1 && a16_rep_ran == 1, "%s (category %d, reply mode %d): request handler %d, reply %d",
            how[send_mode], cat, a16_mode, a16_ran, a16_rep_ran);
    }
}

static void returned_handler(int status, op_t opcode, void *token) {
  (void)token;
  FAIL("unexpected returned message: %s, %s", ct_statusname(status), ct_opname((int)opcode));
}

static void reset(void) {
  req_ran = rep_ran = 0;
  rep_ran_during_reply_call = req_ran_during_request_call = 0;
  reply_rc = -1;
}

int main(void) {
  ct_init("t_loopback", CT_WATCHDOG_SECS);
  AM_SAFE(AM_Init());
  eb_t eb;
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb));
  AM_SAFE(AM_AllocateEndpoint(eb, &g_ep, &g_name));
  {
    en_t own;
    memset(&own, 0, sizeof own);
    AM_SAFE(ramp_GetEndpointName(g_ep, &own));
    CHECK(ramp_enEqual(own, g_name), "ramp_GetEndpointName gave %s, AM_AllocateEndpoint %s", en_str(own),
          en_str(g_name));
    EXPECT_RC(ramp_GetEndpointName(g_ep, NULL), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_GetEndpointName(NULL, &own), AM_ERR_BAD_ARG);
  }
  AM_SAFE(AM_SetTag(g_ep, g_tag));
  AM_SAFE(AM_Map(g_ep, 0, g_name, g_tag));
  AM_SAFE(AM_SetSeg(g_ep, g_seg, sizeof g_seg));
  AM_SAFE(AM_SetHandler(g_ep, 0, returned_handler));
  AM_SAFE(AM_SetHandler(g_ep, H_SREQ, sreq));
  AM_SAFE(AM_SetHandler(g_ep, H_SREP, srep));
  AM_SAFE(AM_SetHandler(g_ep, H_MREQ, mreq));
  AM_SAFE(AM_SetHandler(g_ep, H_MREP, mrep));
  AM_SAFE(AM_SetHandler(g_ep, H_LREQ, lreq));
  AM_SAFE(AM_SetHandler(g_ep, H_NOREPLY, noreply));
  AM_SAFE(AM_SetHandler(g_ep, H_BOUNCE, bounce));
  AM_SAFE(AM_SetHandler(g_ep, H_BOUNCE_REP, bounce_rep));
  AM_SAFE(AM_SetHandler(g_ep, H_A16_S, a16_s));
  AM_SAFE(AM_SetHandler(g_ep, H_A16_M, a16_m));
  AM_SAFE(AM_SetHandler(g_ep, H_A16_L, a16_l));
  AM_SAFE(AM_SetHandler(g_ep, H_A16_REP_S, a16_rep_s));
  AM_SAFE(AM_SetHandler(g_ep, H_A16_REP_M, a16_rep_m));
  AM_SAFE(AM_SetHandler(g_ep, H_A16_REP_L, a16_rep_l));
  AM_SAFE(AM_SetExpectedResources(g_ep, 1, 1)); /* depth 1 */

  /* short */
  PHASE("short loopback");
  reset();
  in_request_call = 1;
  AM_SAFE(AM_Request2(g_ep, 0, H_SREQ, 0xBABE7001u, -2));
  in_request_call = 0;
  CHECK(req_ran == 1, "short loopback request handler ran %d times by the time AM_Request2 returned", req_ran);
  CHECK(req_ran_during_request_call, "short loopback handler did not run inside the request call");
  CHECK(reply_rc == AM_OK, "AM_Reply1 from a loopback handler returned %s", ct_errname(reply_rc));
  CHECK(rep_ran == 1, "short loopback reply handler ran %d times by the time the request returned", rep_ran);
  CHECK(rep_ran_during_reply_call, "loopback reply handler did not run inside AM_Reply1");
  AM_SAFE(AM_Poll(eb));
  CHECK(req_ran == 1 && rep_ran == 1, "handlers ran again after AM_Poll (%d, %d)", req_ran, rep_ran);

  /* medium */
  PHASE("medium loopback");
  reset();
  uint8_t mbuf[100];
  for (int i = 0; i < 100; i++) mbuf[i] = (uint8_t)(i * 3 + 1);
  in_request_call = 1;
  AM_SAFE(AM_RequestI1(g_ep, 0, H_MREQ, mbuf, sizeof mbuf, 42));
  in_request_call = 0;
  CHECK(req_ran == 1 && req_ran_during_request_call, "medium loopback handler did not run inside the call");
  CHECK(reply_rc == AM_OK, "AM_ReplyI0 from loopback returned %s", ct_errname(reply_rc));
  CHECK(rep_ran == 1 && rep_ran_during_reply_call, "medium loopback reply handler did not run inside AM_ReplyI0");
  for (int i = 0; i < 100; i++) CHECK(mbuf[i] == (uint8_t)(i * 3 + 1), "loopback medium changed the source buffer");

  /* long, non overlapping */
  PHASE("long loopback");
  reset();
  uint8_t lsrc[256];
  for (int i = 0; i < 256; i++) lsrc[i] = (uint8_t)(255 - i);
  memset(g_seg, 0, sizeof g_seg);
  in_request_call = 1;
  AM_SAFE(AM_RequestXfer1(g_ep, 0, 1000, H_LREQ, lsrc, sizeof lsrc, 7));
  in_request_call = 0;
  CHECK(req_ran == 1 && req_ran_during_request_call, "long loopback handler did not run inside the call");
  CHECK(g_lreq_buf == g_seg + 1000 && g_lreq_n == 256, "long loopback handler got buf %p n %zu, expected %p 256",
        g_lreq_buf, g_lreq_n, (void *)(g_seg + 1000));
  CHECK(memcmp(g_seg + 1000, lsrc, 256) == 0, "long loopback data not in the segment");
  CHECK(g_seg[999] == 0 && g_seg[1256] == 0, "long loopback wrote outside [offset, offset+nbytes)");

  /* overlapping: destination below the source */
  PHASE("overlapping loopback xfer (dest < src)");
  uint8_t expect[4096];
  for (int i = 0; i < (int)sizeof g_seg; i++) g_seg[i] = (uint8_t)(i * 13 + 5);
  memcpy(expect, g_seg, sizeof g_seg);
  memmove(expect + 10, expect + 50, 1000);
  reset();
  AM_SAFE(AM_RequestXfer1(g_ep, 0, 10, H_LREQ, g_seg + 50, 1000, 7));
  CHECK(req_ran == 1, "overlapping xfer handler ran %d times", req_ran);
  CHECK(memcmp(g_seg, expect, sizeof g_seg) == 0, "overlapping loopback xfer (dst < src) is not a memmove");

  /* overlapping: destination above the source */
  PHASE("overlapping loopback xfer (dest > src)");
  for (int i = 0; i < (int)sizeof g_seg; i++) g_seg[i] = (uint8_t)(i * 29 + 1);
  memcpy(expect, g_seg, sizeof g_seg);
  memmove(expect + 64, expect + 3, 2000);
  reset();
  AM_SAFE(AM_RequestXfer1(g_ep, 0, 64, H_LREQ, g_seg + 3, 2000, 7));
  CHECK(req_ran == 1, "overlapping xfer handler ran %d times", req_ran);
  CHECK(memcmp(g_seg, expect, sizeof g_seg) == 0, "overlapping loopback xfer (dst > src) is not a memmove");

  /* testbounce with one process: reply xfer from seg+100 to seg+100 */
  PHASE("loopback bounce (reply xfer onto itself)");
  reset();
  uint8_t bsrc[1000];
  for (size_t i = 0; i < sizeof bsrc; i++) bsrc[i] = (uint8_t)(i ^ 0x55);
  AM_SAFE(AM_RequestXfer1(g_ep, 0, 100, H_BOUNCE, bsrc, sizeof bsrc, 666));
  CHECK(req_ran == 1, "bounce request handler ran %d times", req_ran);
  CHECK(reply_rc == AM_OK, "AM_ReplyXfer1 onto itself returned %s", ct_errname(reply_rc));
  CHECK(rep_ran == 1 && rep_ran_during_reply_call, "bounce reply handler did not run inside AM_ReplyXfer1");

  /* past the segment end */
  PHASE("loopback xfer past the segment end");
  for (int i = 0; i < (int)sizeof g_seg; i++) g_seg[i] = (uint8_t)i;
  memcpy(expect, g_seg, sizeof g_seg);
  reset();
  EXPECT_RC(AM_RequestXfer1(g_ep, 0, 4000, H_LREQ, lsrc, 200, 7), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_RequestXfer1(g_ep, 0, 4096, H_LREQ, lsrc, 1, 7), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_RequestXfer1(g_ep, 0, 5000, H_LREQ, lsrc, 8, 7), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_RequestXfer1(g_ep, 0, UINTPTR_MAX - 4, H_LREQ, lsrc, 16, 7), AM_ERR_BAD_ARG);
  CHECK(req_ran == 0, "handler ran for a refused loopback xfer");
  CHECK(memcmp(g_seg, expect, sizeof g_seg) == 0, "refused loopback xfer modified the segment");
  /* exactly up to the end is fine */
  AM_SAFE(AM_RequestXfer1(g_ep, 0, 4096 - 200, H_LREQ, lsrc, 200, 7));
  CHECK(req_ran == 1, "xfer ending exactly at the segment end: handler ran %d times", req_ran);
  CHECK(memcmp(g_seg + 4096 - 200, lsrc, 200) == 0, "xfer ending at the segment end: data wrong");

  /* loopback needs neither a credit nor an auto-reply: depth is 1 */
  PHASE("many unreplied loopback requests with depth 1");
  noreply_ran = 0;
  for (int i = 0; i < 1000; i++) {
    AM_SAFE(AM_Request1(g_ep, 0, H_NOREPLY, i));
    CHECK(noreply_ran == i + 1, "loopback request %d: handler count %d", i, noreply_ran);
  }
  poll_for_ms(eb, 50);
  CHECK(noreply_ran == 1000, "no-reply handler ran %d times, expected 1000", noreply_ran);

  PHASE("AM_SetSeg after AM_SetExpectedResources moves the xfer target");
  {
    static uint8_t seg2[512];
    AM_SAFE(AM_SetSeg(g_ep, seg2, sizeof seg2));
    reset();
    memset(g_seg, 0, sizeof g_seg);
    AM_SAFE(AM_RequestXfer1(g_ep, 0, 100, H_LREQ, lsrc, 64, 7));
    CHECK(req_ran == 1 && g_lreq_buf == seg2 + 100, "xfer after SetSeg: buf %p, expected %p", g_lreq_buf,
          (void *)(seg2 + 100));
    CHECK(memcmp(seg2 + 100, lsrc, 64) == 0, "xfer after SetSeg: data not in the new segment");
    for (size_t i = 0; i < sizeof g_seg; i++) CHECK(g_seg[i] == 0, "xfer after SetSeg wrote the old segment");
    EXPECT_RC(AM_RequestXfer1(g_ep, 0, 500, H_LREQ, lsrc, 64, 7), AM_ERR_BAD_ARG); /* new length applies */
    AM_SAFE(AM_SetSeg(g_ep, g_seg, sizeof g_seg));
  }

  PHASE("ramp_RequestArgv / VA / variadic forms with 16 arguments");
  test_argv_and_va_forms();

  AM_SAFE(AM_FreeEndpoint(g_ep));
  AM_SAFE(AM_FreeBundle(eb));
  AM_SAFE(AM_Terminate());
  printf("t_loopback: OK\n");
  return 0;
}
