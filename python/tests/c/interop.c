/*
 * interop.c -- the C side of the Python/C interoperability test (rank 0 of a job whose
 * other ranks run python/tests/scripts/interop_client.py; see python/examples/by_rank.sh).
 *
 *   ramp-run -n N by_rank.sh ./interop -- python3 interop_client.py
 *
 * Phase 1: every Python client sends C a short (3 args), a short with 16 args, a medium
 * and a long request, and one request to an unregistered handler; C replies short,
 * short (16 args), medium and long; the Python client checks the replies and its
 * returned message (EBADHANDLER), then sends C_DONE.
 * Phase 2: C sends every client a short, a medium and a long request, and one to an
 * unregistered handler; the Python handlers reply short, medium and long; C checks the
 * replies and its returned messages.  Then a barrier, and everyone exits 0.
 * Any mismatch: a message on stderr and exit 1 (which stops the job).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ramp_spmd.h"

/* handlers at C */
#define C_SHORT 10
#define C_SHORT16 11
#define C_MEDIUM 12
#define C_LONG 13
#define C_DONE 14
#define C_SHORT_REPLY 40
#define C_MEDIUM_REPLY 41
#define C_LONG_REPLY 42
/* handlers at Python */
#define PY_SHORT_REPLY 20
#define PY_SHORT16_REPLY 21
#define PY_MEDIUM_REPLY 22
#define PY_LONG_REPLY 23
#define PY_SHORT_REQ 30
#define PY_MEDIUM_REQ 31
#define PY_LONG_REQ 32
#define UNREGISTERED 99

#define SLOT 4096 /* bytes of C's segment per client, twice: requests, then replies */

static unsigned char *segment;
static int nproc;
static volatile int done_clients, short_replies, medium_replies, long_replies, returned;
static int failures;

#define CHECK(cond, ...)                                                     \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "interop.c:%d: CHECK failed: %s: ", __LINE__, #cond);  \
      fprintf(stderr, __VA_ARGS__);                                          \
      fprintf(stderr, "\n");                                                 \
      failures++;                                                            \
    }                                                                        \
  } while (0)

static void ok(int rc, const char *what) {
  if (rc != AM_OK) {
    fprintf(stderr, "interop.c: %s failed: %s\n", what, ramp_ErrorName(rc));
    exit(1);
  }
}

static int source_rank(void *token) {
  int r = -1;
  ok(ramp_GetSourceId(token, &r), "ramp_GetSourceId");
  return r;
}

static void c_short(void *token, int32_t a, int32_t b, int32_t c) {
  CHECK(a == source_rank(token) && b == 2 && c == 3, "args %d %d %d", a, b, c);
  ok(AM_Reply2(token, PY_SHORT_REPLY, a + b + c, 0x5eed), "AM_Reply2");
}

static void c_short16(void *token, int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4,
                      int32_t a5, int32_t a6, int32_t a7, int32_t a8, int32_t a9, int32_t a10,
                      int32_t a11, int32_t a12, int32_t a13, int32_t a14, int32_t a15) {
  int32_t r = source_rank(token);
  int32_t v[16] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15};
  for (int i = 0; i < 16; i++) CHECK(v[i] == i * 1000 + r, "arg %d = %d", i, v[i]);
  CHECK(a15 == 15000 + r, "a15");
  ok(AM_Reply16(token, PY_SHORT16_REPLY, a0 + 1, a1 + 1, a2 + 1, a3 + 1, a4 + 1, a5 + 1, a6 + 1,
                a7 + 1, a8 + 1, a9 + 1, a10 + 1, a11 + 1, a12 + 1, a13 + 1, a14 + 1, -1),
     "AM_Reply16");
}

static void c_medium(void *token, void *buf, size_t n, int32_t seq) {
  char expect[128];
  int r = source_rank(token);
  snprintf(expect, sizeof expect, "hello from python rank %d", r);
  CHECK(n == strlen(expect) && !memcmp(buf, expect, n), "medium payload (%zu bytes)", n);
  CHECK(seq == r, "seq %d", seq);
  char rev[128];
  for (size_t i = 0; i < n; i++) rev[i] = ((char *)buf)[n - 1 - i];
  ok(AM_ReplyI1(token, PY_MEDIUM_REPLY, rev, n, seq), "AM_ReplyI1");
}

static void c_long(void *token, void *buf, size_t n, int32_t back_offset, int32_t len) {
  int r = source_rank(token);
  unsigned char *p = buf;
  CHECK(p == segment + (size_t)r * SLOT, "long data at the wrong place");
  CHECK((int32_t)n == len && n == 1000, "long nbytes %zu", n);
  unsigned char out[1000];
  int32_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    CHECK(p[i] == (unsigned char)(i * 7 + r), "long byte %zu", i);
    out[i] = p[i] ^ 0xFF;
    sum += out[i];
  }
  ok(AM_ReplyXfer1(token, back_offset, PY_LONG_REPLY, out, n, sum), "AM_ReplyXfer1");
}

static void c_done(void *token) {
  (void)token;
  done_clients++;
}

static void c_short_reply(void *token, int32_t v) {
  int r = source_rank(token);
  CHECK(v == r * 7, "short reply %d from rank %d", v, r);
  short_replies++;
}

static void c_medium_reply(void *token, void *buf, size_t n, int32_t len) {
  (void)token;
  CHECK((size_t)len == n && n == 26 && !memcmp(buf, "ABCDEFGHIJKLMNOPQRSTUVWXYZ", n),
        "medium reply (%zu bytes)", n);
  medium_replies++;
}

static void c_long_reply(void *token, void *buf, size_t n, int32_t rank) {
  int r = source_rank(token);
  CHECK(rank == r, "long reply rank %d", rank);
  unsigned char *p = buf;
  CHECK(p == segment + (size_t)(nproc + r) * SLOT, "long reply at the wrong place");
  for (size_t i = 0; i < n; i++) CHECK(p[i] == (unsigned char)(i + r + 1), "long reply byte %zu", i);
  CHECK(n == 500, "long reply nbytes %zu", n);
  long_replies++;
}

static void returned_handler(int status, op_t opcode, void *token) {
  handler_t h = 0;
  ramp_category_t cat;
  int is_req = 0;
  ok(ramp_GetTokenInfo(token, &h, &cat, &is_req), "ramp_GetTokenInfo");
  CHECK(status == EBADHANDLER && opcode == AM_REQUEST_M && h == UNREGISTERED && is_req,
        "returned message: status %s opcode %d handler %d", ramp_StatusName(status), opcode, h);
  returned++;
}

int main(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  ok(ramp_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep), "ramp_SPMDStartup");
  nproc = ramp_SPMDNumProcs();
  if (ramp_SPMDMyProc() != 0) {
    fprintf(stderr, "interop.c: run me as rank 0 only (by_rank.sh)\n");
    return 2;
  }
  segment = calloc((size_t)nproc * 2, SLOT);
  ok(AM_SetSeg(ep, segment, (uintptr_t)nproc * 2 * SLOT), "AM_SetSeg");
  ok(AM_SetHandler(ep, 0, returned_handler), "AM_SetHandler");
  ok(AM_SetHandler(ep, C_SHORT, c_short), "AM_SetHandler");
  ok(AM_SetHandler(ep, C_SHORT16, c_short16), "AM_SetHandler");
  ok(AM_SetHandler(ep, C_MEDIUM, c_medium), "AM_SetHandler");
  ok(AM_SetHandler(ep, C_LONG, c_long), "AM_SetHandler");
  ok(AM_SetHandler(ep, C_DONE, c_done), "AM_SetHandler");
  ok(AM_SetHandler(ep, C_SHORT_REPLY, c_short_reply), "AM_SetHandler");
  ok(AM_SetHandler(ep, C_MEDIUM_REPLY, c_medium_reply), "AM_SetHandler");
  ok(AM_SetHandler(ep, C_LONG_REPLY, c_long_reply), "AM_SetHandler");
  ok(ramp_SPMDBarrier(), "ramp_SPMDBarrier");

  /* phase 1: serve the Python clients */
  while (done_clients < nproc - 1) ok(AM_Poll(eb), "AM_Poll");

  /* phase 2: C requests, Python handlers reply */
  unsigned char data[500];
  for (int r = 1; r < nproc; r++) {
    ok(AM_Request2(ep, r, PY_SHORT_REQ, r, 7), "AM_Request2");
    ok(AM_RequestI0(ep, r, PY_MEDIUM_REQ, "abcdefghijklmnopqrstuvwxyz", 26), "AM_RequestI0");
    for (int i = 0; i < 500; i++) data[i] = (unsigned char)(i + r);
    ok(AM_RequestXfer2(ep, r, 8192, PY_LONG_REQ, data, 500, (nproc + r) * SLOT, 500),
       "AM_RequestXfer2");
    ok(AM_Request0(ep, r, UNREGISTERED), "AM_Request0");
  }
  int n = nproc - 1;
  while (short_replies < n || medium_replies < n || long_replies < n || returned < n)
    ok(AM_Poll(eb), "AM_Poll");

  ramp_stats_t st;
  ok(ramp_GetEndpointStatistics(ep, &st), "ramp_GetEndpointStatistics");
  CHECK(st.RequestsReceived[0] >= (uint64_t)3 * n && st.RequestsReceived[1] >= (uint64_t)n &&
            st.RequestsReceived[2] >= (uint64_t)n,
        "statistics");
  if (failures) {
    fprintf(stderr, "interop: C side: %d check(s) failed\n", failures);
    return 1;
  }
  printf("interop: C OK: served %d python client(s) and got every reply\n", n);
  fflush(stdout);
  ok(ramp_SPMDBarrier(), "ramp_SPMDBarrier");
  return 0;
}
