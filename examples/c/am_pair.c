/*
 * am_pair -- two processes exchange requests and replies of every category through the
 * plain AM-2 API, and check that each one arrives intact and EXACTLY ONCE.
 *
 * It uses only <am.h> (no ramp extensions) and is built the way a user builds a program
 * against an installed ramp:
 *
 *     cc am_pair.c $(pkg-config --cflags --libs ramp)
 *
 * main() makes a socketpair and fork()s.  Each process then initialises the layer and
 * allocates its own bundle and endpoint; they swap their endpoint names (en_t, by value)
 * over the socketpair, map translation index 0 = rank 0 (the parent, the server) and
 * index 1 = rank 1 (the child, the client) with one shared tag, and set a segment.
 *
 * The client sends, for every argument count N = 0..16,
 *   a short request   AM_RequestN      args 0x1000*N + k
 *   a medium request  AM_RequestIN     200 bytes of a pattern that depends on N
 *   a long request    AM_RequestXferN  4096+N bytes into the server's segment at N*8192
 * plus one medium of AM_MaxMedium() bytes and one long of AM_MaxLong() bytes.  The
 * server's request handlers check every argument and byte and reply with AM_ReplyN,
 * AM_ReplyIN (echoing the payload) and AM_ReplyXferN (into the client's segment at
 * N*8192); the client's reply handlers check them in turn.  Both sides count every
 * handler run per (category, N): each count must be exactly 1, including after a
 * further ~200 ms of polling (a late duplicate would show).  A final short request
 * ("done") tells the server the client has everything; the server then checks its own
 * table.  Handler 0 is installed on both sides: any returned message is a failure.
 *
 * Exit status 0 only when both processes saw every request and reply exactly once.
 * Run it under fault injection (RAMP_FAULT_LOSS=0.05 ...) to exercise retransmission
 * and duplicate suppression.
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <am.h>

/* ------------------------------------------------------------------------------------ */
/* layout                                                                               */

#define NCOUNTS 17 /* argument counts 0..16 */
#define CAT_SHORT 0
#define CAT_MEDIUM 1
#define CAT_LONG 2
#define NCATS 3
static const char *const cat_name[NCATS] = {"short", "medium", "long"};

#define SERVER 0 /* translation index of rank 0 */
#define CLIENT 1 /* translation index of rank 1 */
#define TAG ((tag_t)0xA3C5F00D2468ACE1ULL)
#define DEPTH 16

#define MED_BYTES 200
#define LONG_BYTES(n) (4096u + (unsigned)(n))
#define SLOT 8192u                                 /* long N goes to offset N*SLOT */
#define MAX_OFF 0x40000u                           /* the max-size long goes here */
#define SEG_BYTES (MAX_OFF + (size_t)AM_MaxLong()) /* 17*SLOT < MAX_OFF */

/* handler indices: request handlers run at the server, reply handlers at the client */
#define H_SREQ 10 /* + N */
#define H_MREQ 30
#define H_LREQ 50
#define H_SREP 70
#define H_MREP 90
#define H_LREP 110
#define H_MAXM_REQ 130
#define H_MAXL_REQ 131
#define H_MAXM_REP 132
#define H_MAXL_REP 133
#define H_DONE_REQ 140
#define H_DONE_REP 141

#define MAXM_ARG ((int32_t)0x4D454449) /* "MEDI" */
#define MAXL_ARG ((int32_t)0x4C4F4E47) /* "LONG" */

/* argument values: requests 0x1000*N + 0x100*category + k (short: 0x1000*N + k);
 * replies the same with the top two bits flipped (negative: sign handling is checked) */
static int32_t req_arg(int cat, int n, int k) { return (int32_t)(0x1000 * n + 0x100 * cat + k); }
static int32_t rep_arg(int cat, int n, int k) {
  return (int32_t)(0xC0000000u ^ (uint32_t)req_arg(cat, n, k));
}

/* payload patterns: byte i of the stream with the given seed */
#define SEED_MREQ(n) (0x100u + (uint32_t)(n)) /* medium request, echoed in the reply */
#define SEED_LREQ(n) (0x200u + (uint32_t)(n))
#define SEED_LREP(n) (0x300u + (uint32_t)(n))
#define SEED_MAXM 0x400u /* echoed */
#define SEED_MAXL_REQ 0x500u
#define SEED_MAXL_REP 0x600u

static uint8_t pat(uint32_t seed, size_t i) {
  uint32_t x = (uint32_t)i * 0x9E3779B1u ^ (seed * 0x85EBCA77u + 0x165667B1u);
  x ^= x >> 15;
  x *= 0x2C1B3C6Du;
  x ^= x >> 12;
  return (uint8_t)(x ^ (uint32_t)(i >> 16));
}

static void fill(void *buf, size_t n, uint32_t seed) {
  uint8_t *b = (uint8_t *)buf;
  for (size_t i = 0; i < n; i++) b[i] = pat(seed, i);
}

/* ------------------------------------------------------------------------------------ */
/* per-process state                                                                     */

static int g_rank = -1;
static eb_t g_eb;
static ep_t g_ep;
static uint8_t *g_seg;
static int g_fd = -1; /* socketpair end to the other process */

static long g_failures;
static long g_returned;

/* server: request handler runs; client: reply handler runs */
static int g_count[NCATS][NCOUNTS];
static int g_max_count[2]; /* [0] max medium, [1] max long */
static int g_done_count;
static int32_t g_server_verdict = -1; /* client: what the server said in its done reply */

static uint8_t g_lsrc[4096 + NCOUNTS]; /* source of long requests / long replies */
static uint8_t *g_maxm_src;            /* client: AM_MaxMedium() bytes */
static uint8_t *g_maxl_src;            /* client: request payload; server: reply payload */

static void fail(const char *fmt, ...) {
  g_failures++;
  if (g_failures > 40) {
    if (g_failures == 41) fprintf(stderr, "am_pair[rank %d]: further failures not shown\n", g_rank);
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "am_pair[rank %d]: FAIL: ", g_rank);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static const char *rc_name(int rc) {
  switch (rc) {
    case AM_OK: return "AM_OK";
    case AM_ERR_NOT_INIT: return "AM_ERR_NOT_INIT";
    case AM_ERR_BAD_ARG: return "AM_ERR_BAD_ARG";
    case AM_ERR_RESOURCE: return "AM_ERR_RESOURCE";
    case AM_ERR_NOT_SENT: return "AM_ERR_NOT_SENT";
    case AM_ERR_IN_USE: return "AM_ERR_IN_USE";
    default: return "unknown code";
  }
}

/* evaluates an AM call; a non-AM_OK result is a failure; yields 1 when it was AM_OK */
#define AM_CHECK(call) am_check((call), #call)
static int am_check(int rc, const char *what) {
  if (rc == AM_OK) return 1;
  fail("%s returned %d (%s)", what, rc, rc_name(rc));
  return 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* counts and reports mismatching bytes; returns the number */
static size_t check_bytes(const void *buf, size_t n, uint32_t seed, const char *what, int num) {
  const uint8_t *b = (const uint8_t *)buf;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; i++) {
    if (b[i] != pat(seed, i)) {
      if (bad++ == 0) first = i;
    }
  }
  if (bad)
    fail("%s N=%d: %zu of %zu payload bytes wrong (first at byte %zu: 0x%02x, expected 0x%02x)",
         what, num, bad, n, first, b[first], pat(seed, first));
  return bad;
}

static void check_tag(void *token, const char *what, int n) {
  tag_t t = 0;
  if (AM_CHECK(AM_GetMsgTag(token, &t)) && t != TAG)
    fail("%s N=%d: message tag 0x%016" PRIx64 ", expected 0x%016" PRIx64, what, n, (uint64_t)t,
         (uint64_t)TAG);
}

/* ------------------------------------------------------------------------------------ */
/* argument lists for N = 0..16: handler parameters (P), their names (A), values (V)      */

#define P0
#define P1 , int32_t a0
#define P2 , int32_t a0, int32_t a1
#define P3 , int32_t a0, int32_t a1, int32_t a2
#define P4 , int32_t a0, int32_t a1, int32_t a2, int32_t a3
#define P5 P4, int32_t a4
#define P6 P5, int32_t a5
#define P7 P6, int32_t a6
#define P8 P7, int32_t a7
#define P9 P8, int32_t a8
#define P10 P9, int32_t a9
#define P11 P10, int32_t a10
#define P12 P11, int32_t a11
#define P13 P12, int32_t a12
#define P14 P13, int32_t a13
#define P15 P14, int32_t a14
#define P16 P15, int32_t a15

#define A0
#define A1 , a0
#define A2 , a0, a1
#define A3 , a0, a1, a2
#define A4 , a0, a1, a2, a3
#define A5 A4, a4
#define A6 A5, a5
#define A7 A6, a6
#define A8 A7, a7
#define A9 A8, a8
#define A10 A9, a9
#define A11 A10, a10
#define A12 A11, a11
#define A13 A12, a12
#define A14 A13, a13
#define A15 A14, a14
#define A16 A15, a15

#define V0
#define V1 , v[0]
#define V2 , v[0], v[1]
#define V3 , v[0], v[1], v[2]
#define V4 , v[0], v[1], v[2], v[3]
#define V5 V4, v[4]
#define V6 V5, v[5]
#define V7 V6, v[6]
#define V8 V7, v[7]
#define V9 V8, v[8]
#define V10 V9, v[9]
#define V11 V10, v[10]
#define V12 V11, v[11]
#define V13 V12, v[12]
#define V14 V13, v[13]
#define V15 V14, v[14]
#define V16 V15, v[15]

#define FOR17(X) \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16)

/* expands the argument list before calling m, so that "h V3" becomes "h, v[0], v[1], v[2]" */
#define APPLY(m, ...) m(__VA_ARGS__)

/* ------------------------------------------------------------------------------------ */
/* sending (client) and replying (server): one AM_*N macro per N                         */

#define SEND_S_CASE(N) \
  case N: return APPLY(AM_Request##N, g_ep, SERVER, (handler_t)(H_SREQ + N) V##N);
#define SEND_M_CASE(N) \
  case N: return APPLY(AM_RequestI##N, g_ep, SERVER, (handler_t)(H_MREQ + N), src, nbytes V##N);
#define SEND_L_CASE(N)                                                                     \
  case N:                                                                                  \
    return APPLY(AM_RequestXfer##N, g_ep, SERVER, (uintptr_t)(N) * SLOT,                   \
                 (handler_t)(H_LREQ + N), src, nbytes V##N);
#define REPLY_S_CASE(N) \
  case N: return APPLY(AM_Reply##N, token, (handler_t)(H_SREP + N) V##N);
#define REPLY_M_CASE(N) \
  case N: return APPLY(AM_ReplyI##N, token, (handler_t)(H_MREP + N), src, nbytes V##N);
#define REPLY_L_CASE(N)                                                                   \
  case N:                                                                                 \
    return APPLY(AM_ReplyXfer##N, token, (uintptr_t)(N) * SLOT, (handler_t)(H_LREP + N), \
                 src, nbytes V##N);

static int send_request(int cat, int n, const int32_t *v, void *src, size_t nbytes) {
  switch (cat) {
    case CAT_SHORT:
      (void)src;
      (void)nbytes;
      switch (n) { FOR17(SEND_S_CASE) }
      break;
    case CAT_MEDIUM:
      switch (n) { FOR17(SEND_M_CASE) }
      break;
    case CAT_LONG:
      switch (n) { FOR17(SEND_L_CASE) }
      break;
  }
  return AM_ERR_BAD_ARG;
}

static int send_reply(void *token, int cat, int n, const int32_t *v, void *src, size_t nbytes) {
  switch (cat) {
    case CAT_SHORT:
      switch (n) { FOR17(REPLY_S_CASE) }
      break;
    case CAT_MEDIUM:
      switch (n) { FOR17(REPLY_M_CASE) }
      break;
    case CAT_LONG:
      switch (n) { FOR17(REPLY_L_CASE) }
      break;
  }
  return AM_ERR_BAD_ARG;
}

/* ------------------------------------------------------------------------------------ */
/* handlers                                                                              */

/* server: every (category, N) request */
static void on_request(void *token, int cat, int n, const int32_t *a, void *buf, size_t nbytes) {
  char what[32];
  snprintf(what, sizeof what, "%s request", cat_name[cat]);
  if (++g_count[cat][n] > 1) fail("%s N=%d: handler ran %d times", what, n, g_count[cat][n]);
  check_tag(token, what, n);
  for (int k = 0; k < n; k++)
    if (a[k] != req_arg(cat, n, k))
      fail("%s N=%d: argument %d is 0x%08" PRIx32 ", expected 0x%08" PRIx32, what, n, k,
           (uint32_t)a[k], (uint32_t)req_arg(cat, n, k));

  int32_t v[16];
  for (int k = 0; k < n; k++) v[k] = rep_arg(cat, n, k);
  int rc = AM_ERR_BAD_ARG;
  switch (cat) {
    case CAT_SHORT:
      rc = send_reply(token, cat, n, v, NULL, 0);
      break;
    case CAT_MEDIUM:
      if (nbytes != MED_BYTES) fail("%s N=%d: %zu bytes, expected %d", what, n, nbytes, MED_BYTES);
      if (((uintptr_t)buf & 7u) != 0) fail("%s N=%d: buffer %p not 8-byte aligned", what, n, buf);
      check_bytes(buf, nbytes < MED_BYTES ? nbytes : MED_BYTES, SEED_MREQ(n), what, n);
      rc = send_reply(token, cat, n, v, buf, nbytes); /* echo */
      break;
    case CAT_LONG:
      if (buf != g_seg + (size_t)n * SLOT)
        fail("%s N=%d: buf is segment+%td, expected segment+%u", what, n,
             (const uint8_t *)buf - g_seg, (unsigned)n * SLOT);
      if (nbytes != LONG_BYTES(n))
        fail("%s N=%d: %zu bytes, expected %u", what, n, nbytes, LONG_BYTES(n));
      check_bytes(g_seg + (size_t)n * SLOT, LONG_BYTES(n), SEED_LREQ(n), what, n);
      fill(g_lsrc, LONG_BYTES(n), SEED_LREP(n));
      rc = send_reply(token, cat, n, v, g_lsrc, LONG_BYTES(n));
      break;
  }
  if (rc != AM_OK) fail("%s N=%d: the reply returned %d (%s)", what, n, rc, rc_name(rc));
}

/* client: every (category, N) reply */
static void on_reply(void *token, int cat, int n, const int32_t *a, void *buf, size_t nbytes) {
  char what[32];
  snprintf(what, sizeof what, "%s reply", cat_name[cat]);
  if (++g_count[cat][n] > 1) fail("%s N=%d: handler ran %d times", what, n, g_count[cat][n]);
  check_tag(token, what, n);
  for (int k = 0; k < n; k++)
    if (a[k] != rep_arg(cat, n, k))
      fail("%s N=%d: argument %d is 0x%08" PRIx32 ", expected 0x%08" PRIx32, what, n, k,
           (uint32_t)a[k], (uint32_t)rep_arg(cat, n, k));
  switch (cat) {
    case CAT_MEDIUM:
      if (nbytes != MED_BYTES) fail("%s N=%d: %zu bytes, expected %d", what, n, nbytes, MED_BYTES);
      if (((uintptr_t)buf & 7u) != 0) fail("%s N=%d: buffer %p not 8-byte aligned", what, n, buf);
      check_bytes(buf, nbytes < MED_BYTES ? nbytes : MED_BYTES, SEED_MREQ(n), what, n);
      break;
    case CAT_LONG:
      if (buf != g_seg + (size_t)n * SLOT)
        fail("%s N=%d: buf is segment+%td, expected segment+%u", what, n,
             (const uint8_t *)buf - g_seg, (unsigned)n * SLOT);
      if (nbytes != LONG_BYTES(n))
        fail("%s N=%d: %zu bytes, expected %u", what, n, nbytes, LONG_BYTES(n));
      check_bytes(g_seg + (size_t)n * SLOT, LONG_BYTES(n), SEED_LREP(n), what, n);
      break;
  }
}

/* one handler of each kind per N, with the exact prototype the dispatcher calls */
#define DEF_HANDLERS(N)                                                              \
  static void sreq##N(void *token P##N) {                                            \
    int32_t a[] = {0 A##N};                                                          \
    on_request(token, CAT_SHORT, N, a + 1, NULL, 0);                                 \
  }                                                                                  \
  static void mreq##N(void *token, void *buf, size_t nbytes P##N) {                  \
    int32_t a[] = {0 A##N};                                                          \
    on_request(token, CAT_MEDIUM, N, a + 1, buf, nbytes);                            \
  }                                                                                  \
  static void lreq##N(void *token, void *buf, size_t nbytes P##N) {                  \
    int32_t a[] = {0 A##N};                                                          \
    on_request(token, CAT_LONG, N, a + 1, buf, nbytes);                              \
  }                                                                                  \
  static void srep##N(void *token P##N) {                                            \
    int32_t a[] = {0 A##N};                                                          \
    on_reply(token, CAT_SHORT, N, a + 1, NULL, 0);                                   \
  }                                                                                  \
  static void mrep##N(void *token, void *buf, size_t nbytes P##N) {                  \
    int32_t a[] = {0 A##N};                                                          \
    on_reply(token, CAT_MEDIUM, N, a + 1, buf, nbytes);                              \
  }                                                                                  \
  static void lrep##N(void *token, void *buf, size_t nbytes P##N) {                  \
    int32_t a[] = {0 A##N};                                                          \
    on_reply(token, CAT_LONG, N, a + 1, buf, nbytes);                                \
  }
FOR17(DEF_HANDLERS)

/* the max-size medium and long, one argument each */
static void maxm_req(void *token, void *buf, size_t nbytes, int32_t a0) {
  if (++g_max_count[0] > 1) fail("max medium request: handler ran %d times", g_max_count[0]);
  check_tag(token, "max medium request", 1);
  if (a0 != MAXM_ARG) fail("max medium request: argument 0x%08" PRIx32, (uint32_t)a0);
  if (nbytes != (size_t)AM_MaxMedium())
    fail("max medium request: %zu bytes, expected %d", nbytes, AM_MaxMedium());
  if (((uintptr_t)buf & 7u) != 0) fail("max medium request: buffer %p not 8-byte aligned", buf);
  check_bytes(buf, nbytes, SEED_MAXM, "max medium request", 1);
  AM_CHECK(AM_ReplyI1(token, H_MAXM_REP, buf, nbytes, ~a0)); /* echo */
}

static void maxm_rep(void *token, void *buf, size_t nbytes, int32_t a0) {
  if (++g_max_count[0] > 1) fail("max medium reply: handler ran %d times", g_max_count[0]);
  check_tag(token, "max medium reply", 1);
  if (a0 != ~MAXM_ARG) fail("max medium reply: argument 0x%08" PRIx32, (uint32_t)a0);
  if (nbytes != (size_t)AM_MaxMedium())
    fail("max medium reply: %zu bytes, expected %d", nbytes, AM_MaxMedium());
  if (((uintptr_t)buf & 7u) != 0) fail("max medium reply: buffer %p not 8-byte aligned", buf);
  check_bytes(buf, nbytes, SEED_MAXM, "max medium reply", 1);
}

static void maxl_req(void *token, void *buf, size_t nbytes, int32_t a0) {
  if (++g_max_count[1] > 1) fail("max long request: handler ran %d times", g_max_count[1]);
  check_tag(token, "max long request", 1);
  if (a0 != MAXL_ARG) fail("max long request: argument 0x%08" PRIx32, (uint32_t)a0);
  if (buf != g_seg + MAX_OFF)
    fail("max long request: buf is segment+%td, expected segment+%u",
         (const uint8_t *)buf - g_seg, MAX_OFF);
  if (nbytes != (size_t)AM_MaxLong())
    fail("max long request: %zu bytes, expected %d", nbytes, AM_MaxLong());
  check_bytes(g_seg + MAX_OFF, (size_t)AM_MaxLong(), SEED_MAXL_REQ, "max long request", 1);
  AM_CHECK(AM_ReplyXfer1(token, MAX_OFF, H_MAXL_REP, g_maxl_src, (size_t)AM_MaxLong(), ~a0));
}

static void maxl_rep(void *token, void *buf, size_t nbytes, int32_t a0) {
  if (++g_max_count[1] > 1) fail("max long reply: handler ran %d times", g_max_count[1]);
  check_tag(token, "max long reply", 1);
  if (a0 != ~MAXL_ARG) fail("max long reply: argument 0x%08" PRIx32, (uint32_t)a0);
  if (buf != g_seg + MAX_OFF)
    fail("max long reply: buf is segment+%td, expected segment+%u", (const uint8_t *)buf - g_seg,
         MAX_OFF);
  if (nbytes != (size_t)AM_MaxLong())
    fail("max long reply: %zu bytes, expected %d", nbytes, AM_MaxLong());
  check_bytes(g_seg + MAX_OFF, (size_t)AM_MaxLong(), SEED_MAXL_REP, "max long reply", 1);
}

/* number of table entries that are not exactly 1 (printed when `label` is not NULL) */
static int table_bad(const char *label, const char *kind) {
  int bad = 0;
  for (int c = 0; c < NCATS; c++)
    for (int n = 0; n < NCOUNTS; n++)
      if (g_count[c][n] != 1) {
        bad++;
        if (label)
          fail("%s: %s %s N=%d ran %d times, expected exactly 1", label, cat_name[c], kind, n,
               g_count[c][n]);
      }
  for (int m = 0; m < 2; m++)
    if (g_max_count[m] != 1) {
      bad++;
      if (label)
        fail("%s: max-size %s %s ran %d times, expected exactly 1", label,
             m ? "long" : "medium", kind, g_max_count[m]);
    }
  return bad;
}

static volatile int g_done_seen;
static void done_req(void *token) {
  if (++g_done_count > 1) fail("done request: handler ran %d times", g_done_count);
  g_done_seen = 1;
  AM_CHECK(AM_Reply1(token, H_DONE_REP, table_bad(NULL, "request")));
}

static void done_rep(void *token, int32_t verdict) {
  (void)token;
  if (++g_done_count > 1) fail("done reply: handler ran %d times", g_done_count);
  g_server_verdict = verdict;
}

static const char *status_name(int s) {
  static const char *const names[] = {"?",           "EBADARGS",     "EBADENTRY",   "EBADTAG",
                                      "EBADHANDLER", "EBADSEGOFF",   "EBADLENGTH",  "EBADENDPOINT",
                                      "ECONGESTION", "EUNREACHABLE", "EREPLYREJECTED"};
  return (s >= 1 && s <= 10) ? names[s] : "unknown status";
}

static const char *opcode_name(op_t op) {
  static const char *const names[] = {"?",          "AM_REQUEST_M", "AM_REQUEST_IM",
                                      "AM_REQUEST_XFER_M", "AM_REPLY_M", "AM_REPLY_IM",
                                      "AM_REPLY_XFER_M"};
  return (op >= 1 && op <= 6) ? names[op] : "unknown opcode";
}

/* handler 0: a returned message is always a failure here */
static void on_returned(int status, op_t opcode, void *token) {
  tag_t t = 0;
  int rc = AM_GetMsgTag(token, &t);
  g_returned++;
  fail("returned message: status %d (%s), opcode %d (%s), tag 0x%016" PRIx64 "%s", status,
       status_name(status), (int)opcode, opcode_name(opcode), (uint64_t)t,
       rc == AM_OK ? "" : " (AM_GetMsgTag failed)");
}

/* ------------------------------------------------------------------------------------ */
/* the socketpair: name exchange, barrier, "bye"                                          */

static int write_all(int fd, const void *p, size_t n) {
  const char *b = (const char *)p;
  while (n > 0) {
    ssize_t w = write(fd, b, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

static int read_all(int fd, void *p, size_t n) {
  char *b = (char *)p;
  while (n > 0) {
    ssize_t r = read(fd, b, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    b += r;
    n -= (size_t)r;
  }
  return 0;
}

/* non-blocking look at the socketpair: -1 nothing yet, 0 EOF/error, else the byte + 1 */
static int peek_peer(void) {
  struct pollfd pfd = {.fd = g_fd, .events = POLLIN, .revents = 0};
  if (poll(&pfd, 1, 0) <= 0) return -1;
  unsigned char c;
  ssize_t r = read(g_fd, &c, 1);
  if (r == 1) return (int)c + 1;
  if (r < 0 && (errno == EINTR || errno == EAGAIN)) return -1;
  return 0;
}

/* ------------------------------------------------------------------------------------ */
/* the two roles                                                                         */

static int all_replies_in(void) {
  for (int c = 0; c < NCATS; c++)
    for (int n = 0; n < NCOUNTS; n++)
      if (g_count[c][n] < 1) return 0;
  return g_max_count[0] >= 1 && g_max_count[1] >= 1;
}

/* polls until cond() or the deadline; 0 on success, -1 on timeout, -2 if the peer went away */
static int poll_until(int (*cond)(void), double seconds) {
  double deadline = now_s() + seconds;
  for (unsigned i = 0;; i++) {
    if (cond && cond()) return 0;
    if (!AM_CHECK(AM_Poll(g_eb))) return -2;
    if ((i & 63) == 0) {
      if (now_s() > deadline) return cond ? -1 : 0;
      if (peek_peer() == 0) return -2;
    }
  }
}

static int done_reply_in(void) { return g_done_count >= 1; }

static void client(void) {
  int32_t v[16];
  double t0 = now_s();
  for (int n = 0; n < NCOUNTS; n++) {
    if (peek_peer() == 0) {
      fail("the server went away while requests were being sent");
      break;
    }
    for (int c = 0; c < NCATS; c++) {
      for (int k = 0; k < n; k++) v[k] = req_arg(c, n, k);
      int rc = AM_ERR_BAD_ARG;
      if (c == CAT_SHORT) {
        rc = send_request(c, n, v, NULL, 0);
      } else if (c == CAT_MEDIUM) {
        uint8_t med[MED_BYTES];
        fill(med, sizeof med, SEED_MREQ(n));
        rc = send_request(c, n, v, med, sizeof med);
        memset(med, 0xEE, sizeof med); /* the request copied it */
      } else {
        fill(g_lsrc, LONG_BYTES(n), SEED_LREQ(n));
        rc = send_request(c, n, v, g_lsrc, LONG_BYTES(n));
        memset(g_lsrc, 0xEE, sizeof g_lsrc);
      }
      if (rc != AM_OK) fail("%s request N=%d: returned %d (%s)", cat_name[c], n, rc, rc_name(rc));
    }
  }
  AM_CHECK(AM_RequestI1(g_ep, SERVER, H_MAXM_REQ, g_maxm_src, (size_t)AM_MaxMedium(), MAXM_ARG));
  AM_CHECK(AM_RequestXfer1(g_ep, SERVER, MAX_OFF, H_MAXL_REQ, g_maxl_src, (size_t)AM_MaxLong(),
                           MAXL_ARG));

  int w = poll_until(all_replies_in, 60.0);
  if (w != 0) {
    fail(w == -1 ? "60 s deadline: not every reply arrived (%.1f s)"
                 : "server went away before every reply arrived (%.1f s)",
         now_s() - t0);
    for (int c = 0; c < NCATS; c++)
      for (int n = 0; n < NCOUNTS; n++)
        if (g_count[c][n] == 0) fail("missing: %s reply N=%d", cat_name[c], n);
    for (int m = 0; m < 2; m++)
      if (g_max_count[m] == 0) fail("missing: max-size %s reply", m ? "long" : "medium");
  } else {
    table_bad("when all replies were in", "reply");
  }

  /* tell the server we are done; it answers with the number of its table entries != 1 */
  AM_CHECK(AM_Request0(g_ep, SERVER, H_DONE_REQ));
  w = poll_until(done_reply_in, 30.0);
  if (w != 0) fail("no reply to the done request (%s)", w == -1 ? "30 s" : "server went away");
  /* keep polling: a late duplicate of anything must not show up */
  poll_until(NULL, 0.2);
  table_bad("after 200 ms more polling", "reply");
  if (g_done_count != 1) fail("done reply ran %d times, expected exactly 1", g_done_count);
  if (g_server_verdict != 0)
    fail("the server reported %d request table entries not exactly 1 at done", (int)g_server_verdict);
  if (g_returned) fail("%ld returned message(s)", g_returned);
  /* let the server go */
  if (write_all(g_fd, "B", 1) != 0) fail("cannot tell the server we are finished");
}

static void server(void) {
  double deadline = now_s() + 100.0;
  int bye = 0;
  for (unsigned i = 0;; i++) {
    if (!AM_CHECK(AM_Poll(g_eb))) break;
    if ((i & 15) == 0) {
      int p = peek_peer();
      if (p == 'B' + 1) {
        bye = 1;
        break;
      }
      if (p == 0) break;
      if (now_s() > deadline) {
        fail("100 s deadline: the client did not finish");
        break;
      }
    }
  }
  if (!bye) fail("the client went away without finishing%s", g_done_seen ? "" : " (no done request)");
  if (!g_done_seen) fail("no done request arrived");
  table_bad("at the end", "request");
  if (g_done_count != 1) fail("done request ran %d times, expected exactly 1", g_done_count);
  if (g_returned) fail("%ld returned message(s)", g_returned);
}

#define REG_HANDLERS(N)                                                   \
  ok &= AM_CHECK(AM_SetHandler(g_ep, (handler_t)(H_SREQ + N), sreq##N)); \
  ok &= AM_CHECK(AM_SetHandler(g_ep, (handler_t)(H_MREQ + N), mreq##N)); \
  ok &= AM_CHECK(AM_SetHandler(g_ep, (handler_t)(H_LREQ + N), lreq##N)); \
  ok &= AM_CHECK(AM_SetHandler(g_ep, (handler_t)(H_SREP + N), srep##N)); \
  ok &= AM_CHECK(AM_SetHandler(g_ep, (handler_t)(H_MREP + N), mrep##N)); \
  ok &= AM_CHECK(AM_SetHandler(g_ep, (handler_t)(H_LREP + N), lrep##N));

/* one process: set up, play its role, tear down; returns the exit status */
static int run(int rank, int fd) {
  g_rank = rank;
  g_fd = fd;
  en_t names[2];
  int ok = 1;
  ok &= AM_CHECK(AM_Init());
  ok &= ok && AM_CHECK(AM_AllocateBundle(AM_SEQ, &g_eb));
  ok &= ok && AM_CHECK(AM_AllocateEndpoint(g_eb, &g_ep, &names[rank]));
  if (!ok) return 1;
  en_t mine = names[rank];
  if (write_all(fd, &mine, sizeof(en_t)) != 0 || read_all(fd, &names[1 - rank], sizeof(en_t)) != 0) {
    fail("endpoint name exchange over the socketpair failed");
    return 1;
  }
  g_seg = (uint8_t *)malloc(SEG_BYTES);
  g_maxl_src = (uint8_t *)malloc((size_t)AM_MaxLong());
  g_maxm_src = (uint8_t *)malloc((size_t)AM_MaxMedium());
  if (!g_seg || !g_maxl_src || !g_maxm_src) {
    fail("out of memory");
    return 1;
  }
  memset(g_seg, 0, SEG_BYTES);
  fill(g_maxm_src, (size_t)AM_MaxMedium(), SEED_MAXM);
  fill(g_maxl_src, (size_t)AM_MaxLong(), rank == CLIENT ? SEED_MAXL_REQ : SEED_MAXL_REP);

  ok &= AM_CHECK(AM_SetTag(g_ep, TAG));
  ok &= AM_CHECK(AM_Map(g_ep, SERVER, names[SERVER], TAG));
  ok &= AM_CHECK(AM_Map(g_ep, CLIENT, names[CLIENT], TAG));
  ok &= AM_CHECK(AM_SetExpectedResources(g_ep, 2, DEPTH));
  ok &= AM_CHECK(AM_SetSeg(g_ep, g_seg, SEG_BYTES));
  ok &= AM_CHECK(AM_SetHandler(g_ep, 0, on_returned));
  FOR17(REG_HANDLERS)
  ok &= AM_CHECK(AM_SetHandler(g_ep, H_MAXM_REQ, maxm_req));
  ok &= AM_CHECK(AM_SetHandler(g_ep, H_MAXL_REQ, maxl_req));
  ok &= AM_CHECK(AM_SetHandler(g_ep, H_MAXM_REP, maxm_rep));
  ok &= AM_CHECK(AM_SetHandler(g_ep, H_MAXL_REP, maxl_rep));
  ok &= AM_CHECK(AM_SetHandler(g_ep, H_DONE_REQ, done_req));
  ok &= AM_CHECK(AM_SetHandler(g_ep, H_DONE_REP, done_rep));
  if (!ok) return 1;

  /* barrier: neither side sends before both are ready */
  char r = 'R', got = 0;
  if (write_all(fd, &r, 1) != 0 || read_all(fd, &got, 1) != 0 || got != 'R') {
    fail("barrier over the socketpair failed");
    return 1;
  }

  if (rank == CLIENT)
    client();
  else
    server();

  AM_CHECK(AM_Terminate());
  free(g_seg);
  free(g_maxl_src);
  free(g_maxm_src);
  return g_failures ? 1 : 0;
}

int main(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    perror("am_pair: socketpair");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN); /* a peer that went away shows as a write error, not a kill */
  fflush(stdout);
  fflush(stderr);
  double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0) {
    perror("am_pair: fork");
    return 2;
  }
  if (pid == 0) { /* rank 1: the client */
    close(sv[0]);
    int rc = run(CLIENT, sv[1]);
    close(sv[1]);
    fflush(stdout);
    fflush(stderr);
    _exit(rc);
  }
  close(sv[1]);
  int rc0 = run(SERVER, sv[0]);
  close(sv[0]); /* a client still waiting sees EOF */

  int st = 0;
  char child[64];
  int rc1 = 1;
  if (waitpid(pid, &st, 0) != pid) {
    snprintf(child, sizeof child, "FAILED (waitpid: %s)", strerror(errno));
  } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
    rc1 = 0;
    snprintf(child, sizeof child, "OK");
  } else if (WIFEXITED(st)) {
    snprintf(child, sizeof child, "FAILED (exit %d)", WEXITSTATUS(st));
  } else {
    snprintf(child, sizeof child, "FAILED (signal %d)", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
  }
  double dt = now_s() - t0;
  if (rc0 == 0 && rc1 == 0) {
    printf("am_pair: %dx%d categories + 2 max-size, every request and reply exactly once "
           "(rank 0 OK, rank 1 OK) in %.2f s\n",
           NCOUNTS, NCATS, dt);
    return 0;
  }
  printf("am_pair: FAILED, see the FAIL lines above (rank 0 %s, rank 1 %s) after %.2f s\n",
         rc0 == 0 ? "OK" : "FAILED", child, dt);
  return 1;
}
