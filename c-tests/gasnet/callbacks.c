/*
 * callbacks.c -- AMUDP_SetHandlerCallbacks as GASNet's trace/debug builds use it
 * (gasnet_core.c: gasnetc_attach_primary installs gasnetc_enteringHandler_hook and
 * gasnetc_leavingHandler_hook on its endpoint).  A 2-rank job (master form: ./callbacks 2):
 * rank 0 sends rank 1 a short (3 args), a medium (2 args, 100 bytes) and a long (1 arg,
 * 200 bytes) request; rank 1's handlers answer with a long, a medium and a short reply.
 * On both ranks every handler must run between a pre-callback and a post-callback given
 * its category (amudp_Short/Medium/Long), request flag, handler index, token, payload,
 * argument count and arguments; then removing the callbacks (NULL, NULL) must stop them.
 * Prints "callbacks: rank R ok" on success; "FAILED CHECK" and exit 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "amudp_spmd.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAILED CHECK (rank %d) %s:%d: %s\n", \
  AMUDP_SPMDMyProc(), __FILE__, __LINE__, #c); fflush(stderr); AMUDP_SPMDExit(1); } } while (0)

enum { H_SHORT = 10, H_MEDIUM, H_LONG, H_RSHORT, H_RMEDIUM, H_RLONG };

static ep_t ep;
static char seg[4096];
static volatile int replies, inside, pres, posts;
static struct { amudp_category_t cat; int isreq, handler, numargs; void *token, *buf;
                size_t nbytes; uint32_t a0; } last;

static void pre(amudp_category_t cat, int isReq, int handlerId, void *token, void *buf,
                size_t nbytes, int numargs, uint32_t *args) {
  CHECK(!inside);
  inside = 1;
  pres++;
  last.cat = cat; last.isreq = isReq; last.handler = handlerId; last.token = token;
  last.buf = buf; last.nbytes = nbytes; last.numargs = numargs;
  last.a0 = numargs > 0 ? args[0] : 0;
}
static void post(amudp_category_t cat, int isReq) {
  CHECK(inside);
  inside = 0;
  posts++;
  CHECK(cat == last.cat && isReq == last.isreq); /* the pre-callback's message */
}
/* what each handler checks: its pre-callback ran for it, with these values */
static void seen(void *token, amudp_category_t cat, int isreq, int h, int nargs, uint32_t a0,
                 void *buf, size_t n) {
  CHECK(inside);
  CHECK(last.token == token);
  CHECK(last.cat == cat);
  CHECK(last.isreq == isreq);
  CHECK(last.handler == h);
  CHECK(last.numargs == nargs);
  CHECK(last.a0 == a0);
  CHECK(last.buf == buf);
  CHECK(last.nbytes == n);
}

static void h_short(void *t, int a, int b, int c) {
  seen(t, amudp_Short, 1, H_SHORT, 3, (uint32_t)a, NULL, 0);
  CHECK(a == 7 && b == 8 && c == 9);
  CHECK(AM_ReplyXfer1(t, 0, H_RLONG, seg, 300, 71) == AM_OK);
}
static void h_medium(void *t, void *buf, size_t n, int a, int b) {
  seen(t, amudp_Medium, 1, H_MEDIUM, 2, (uint32_t)a, buf, n);
  CHECK(n == 100 && a == 5 && b == 6 && ((char *)buf)[99] == 'm');
  CHECK(AM_ReplyI1(t, H_RMEDIUM, seg, 50, 51) == AM_OK);
}
static void h_long(void *t, void *buf, size_t n, int a) {
  seen(t, amudp_Long, 1, H_LONG, 1, (uint32_t)a, buf, n);
  CHECK(n == 200 && a == 4 && buf == seg + 1000);
  CHECK(AM_Reply0(t, H_RSHORT) == AM_OK);
}
static void h_rshort(void *t) { seen(t, amudp_Short, 0, H_RSHORT, 0, 0, NULL, 0); replies++; }
static void h_rmedium(void *t, void *buf, size_t n, int a) {
  seen(t, amudp_Medium, 0, H_RMEDIUM, 1, (uint32_t)a, buf, n); replies++;
}
static void h_rlong(void *t, void *buf, size_t n, int a) {
  seen(t, amudp_Long, 0, H_RLONG, 1, (uint32_t)a, buf, n);
  CHECK(buf == seg && n == 300);
  replies++;
}
static void h_plain(void *t) { (void)t; CHECK(!inside); replies++; }
static void h_plain_reply(void *t) { CHECK(!inside); CHECK(AM_Reply0(t, H_SHORT + 20) == AM_OK); }

int main(int argc, char **argv) {
  eb_t eb;
  char buf[100];
  CHECK(AMUDP_SPMDStartup(&argc, &argv, 0, 0, NULL, NULL, &eb, &ep) == AM_OK);
  int me = AMUDP_SPMDMyProc();
  CHECK(AMUDP_SPMDNumProcs() == 2);
  CHECK(AM_SetSeg(ep, seg, sizeof seg) == AM_OK);
  CHECK(AM_SetHandler(ep, H_SHORT, h_short) == AM_OK);
  CHECK(AM_SetHandler(ep, H_MEDIUM, h_medium) == AM_OK);
  CHECK(AM_SetHandler(ep, H_LONG, h_long) == AM_OK);
  CHECK(AM_SetHandler(ep, H_RSHORT, h_rshort) == AM_OK);
  CHECK(AM_SetHandler(ep, H_RMEDIUM, h_rmedium) == AM_OK);
  CHECK(AM_SetHandler(ep, H_RLONG, h_rlong) == AM_OK);
  CHECK(AM_SetHandler(ep, H_SHORT + 20, h_plain) == AM_OK);
  CHECK(AM_SetHandler(ep, H_SHORT + 21, h_plain_reply) == AM_OK);
  CHECK(AMUDP_SetHandlerCallbacks(NULL, pre, post) == AM_ERR_BAD_ARG);
  CHECK(AMUDP_SetHandlerCallbacks(ep, pre, post) == AM_OK);
  CHECK(AMUDP_SPMDBarrier() == AM_OK);
  if (me == 0) {
    memset(buf, 'm', sizeof buf);
    CHECK(AM_Request3(ep, 1, H_SHORT, 7, 8, 9) == AM_OK);
    CHECK(AM_RequestI2(ep, 1, H_MEDIUM, buf, 100, 5, 6) == AM_OK);
    CHECK(AM_RequestXfer1(ep, 1, 1000, H_LONG, buf, 200, 4) == AM_OK);
    while (replies < 3) CHECK(AM_Poll(eb) == AM_OK);
  }
  CHECK(AMUDP_SPMDBarrier() == AM_OK);
  CHECK(!inside);
  CHECK(pres == 3 && posts == 3);
  /* removed: handlers run without them */
  CHECK(AMUDP_SetHandlerCallbacks(ep, NULL, NULL) == AM_OK);
  CHECK(AMUDP_SPMDBarrier() == AM_OK);
  if (me == 0) {
    replies = 0;
    CHECK(AM_Request0(ep, 1, H_SHORT + 21) == AM_OK);
    while (replies < 1) CHECK(AM_Poll(eb) == AM_OK);
  }
  CHECK(AMUDP_SPMDBarrier() == AM_OK);
  CHECK(pres == 3 && posts == 3);
  printf("callbacks: rank %d ok\n", me);
  fflush(stdout);
  AMUDP_SPMDExit(0);
  return 0;
}
