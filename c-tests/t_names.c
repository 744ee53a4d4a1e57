/* t_names: handler names (ramp_SetHandlerName, ramp_LookupHandler) between two
 * processes that installed their handlers at different indices, in different orders,
 * and the name calls' argument checks; ramp_NamePublish / ramp_NameLookup outside an
 * SPMD job (AM_ERR_RESOURCE).
 *
 * Rank 0 installs "ping" at 10 and "pong" at 20 (ping first); rank 1 installs "pong" at
 * 100, then "ping" at 200. Each rank looks up "ping" at the other, sends it a request
 * carrying its own "pong" index, and waits for the pong. A missing name is
 * AM_ERR_BAD_ARG (every time: never cached); bad names (empty, 64 bytes, control
 * characters, non-ASCII), NULL pointers, a handler not installed, an unmapped index are
 * AM_ERR_BAD_ARG.
 */
#include "common.h"

static pair_t P;
static int pings, pongs;
static handler_t my_ping, my_pong;

static void h_ping(void *token, int32_t pong_at) {
  pings++;
  AM_SAFE(AM_Reply1(token, (handler_t)pong_at, 1));
}
static void h_pong(void *token, int32_t one) {
  (void)token;
  CHECK(one == 1, "pong carried %d", (int)one);
  pongs++;
}

static void setup(pair_t *p, void *arg) {
  (void)arg;
  my_ping = p->rank == 0 ? 10 : 200;
  my_pong = p->rank == 0 ? 20 : 100;
  if (p->rank == 0) {
    AM_SAFE(AM_SetHandler(p->ep, my_ping, (am_handler_fn_t)h_ping));
    AM_SAFE(AM_SetHandler(p->ep, my_pong, (am_handler_fn_t)h_pong));
  } else {
    AM_SAFE(AM_SetHandler(p->ep, my_pong, (am_handler_fn_t)h_pong));
    AM_SAFE(AM_SetHandler(p->ep, my_ping, (am_handler_fn_t)h_ping));
  }
  AM_SAFE(ramp_SetHandlerName(p->ep, my_ping, "ping"));
  AM_SAFE(ramp_SetHandlerName(p->ep, my_pong, "pong"));
}

int main(void) {
  ct_init("t_names", 60);

  PHASE("outside a job");
  AM_SAFE(AM_Init());
  {
    eb_t eb;
    ep_t ep;
    en_t n;
    AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb));
    AM_SAFE(AM_AllocateEndpoint(eb, &ep, &n));
    EXPECT_RC(ramp_NamePublish(ep, "svc"), AM_ERR_RESOURCE);
    EXPECT_RC(ramp_NameLookup("svc", &n, 50), AM_ERR_RESOURCE);
    EXPECT_RC(ramp_NameLookup("bad svc", &n, 0), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_NameLookup(NULL, &n, 0), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_NameLookup("svc", NULL, 0), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_NameLookup("svc", &n, -1), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_NamePublish(ep, NULL), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_NamePublish(ep, ""), AM_ERR_BAD_ARG);
    EXPECT_RC(ramp_NamePublish(NULL, "svc"), AM_ERR_BAD_ARG);
    /* lookups before AM_SetExpectedResources */
    handler_t h = 0;
    EXPECT_RC(ramp_LookupHandler(ep, 0, "x", &h), AM_ERR_NOT_INIT);
    AM_SAFE(AM_FreeBundle(eb));
  }
  AM_SAFE(AM_Terminate());

  spawn_pair(&P, AM_SEQ, 4, setup, NULL);

  PHASE("argument checks");
  char long_name[65];
  memset(long_name, 'n', 64);
  long_name[64] = 0;
  EXPECT_RC(ramp_SetHandlerName(P.ep, my_ping, ""), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_SetHandlerName(P.ep, my_ping, long_name), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_SetHandlerName(P.ep, my_ping, "tab\there"), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_SetHandlerName(P.ep, my_ping, "caf\xc3\xa9"), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_SetHandlerName(P.ep, my_ping, NULL), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_SetHandlerName(P.ep, 77, "not installed"), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_SetHandlerName(NULL, my_ping, "x"), AM_ERR_BAD_ARG);
  long_name[63] = 0; /* 63 bytes: the longest name */
  handler_t h = 0;
  EXPECT_RC(ramp_LookupHandler(P.ep, (uint32_t)P.peer, long_name, &h), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_LookupHandler(P.ep, (uint32_t)P.peer, "", &h), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_LookupHandler(P.ep, (uint32_t)P.peer, NULL, &h), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_LookupHandler(P.ep, (uint32_t)P.peer, "ping", NULL), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_LookupHandler(P.ep, 7, "ping", &h), AM_ERR_BAD_ARG); /* not mapped */
  EXPECT_RC(ramp_LookupHandler(P.ep, 1u << 30, "ping", &h), AM_ERR_BAD_ARG);

  PHASE("lookups across install orders");
  h = 0;
  AM_SAFE(ramp_LookupHandler(P.ep, (uint32_t)P.peer, "ping", &h));
  handler_t want = P.rank == 0 ? 200 : 10;
  CHECK(h == want, "peer's ping at %d, expected %d", (int)h, (int)want);
  handler_t again = 0;
  AM_SAFE(ramp_LookupHandler(P.ep, (uint32_t)P.peer, "ping", &again));
  CHECK(again == h, "cached lookup %d, first %d", (int)again, (int)h);
  handler_t own = 0;
  AM_SAFE(ramp_LookupHandler(P.ep, (uint32_t)P.rank, "pong", &own));
  CHECK(own == my_pong, "own pong %d, expected %d", (int)own, (int)my_pong);
  for (int i = 0; i < 2; i++) {
    handler_t untouched = 123;
    EXPECT_RC(ramp_LookupHandler(P.ep, (uint32_t)P.peer, "no such handler", &untouched), AM_ERR_BAD_ARG);
    CHECK(untouched == 123, "out-parameter written on error");
  }
  AM_SAFE(AM_Request1(P.ep, (uint32_t)P.peer, h, my_pong));
  POLL_UNTIL(P.eb, pongs == 1 && pings == 1, 30, "ping/pong: pings %d pongs %d", pings, pongs);
  ct_note("rank %d: peer's ping at %d, pong received", P.rank, (int)h);

  pair_finish(&P, 100);
  ct_note("t_names: ok");
  return 0;
}
