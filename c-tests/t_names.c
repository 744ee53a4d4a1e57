/* t_names: handler names (ramp_SetHandlerName, ramp_LookupHandler) between two
 * processes that installed their handlers at different indices, in different orders,
 * and the name calls' argument checks; ramp_NamePublish / ramp_NameLookup outside an
 * SPMD job (AM_ERR_RESOURCE), then inside one: the test runs itself with the argument
 * "spmd" as the master of a 3-rank job (AMUDP's master form, ramp's local launcher),
 * whose ranks publish "svc-<rank>" and look every rank's name up, with no barrier in
 * between (a look-up waits for a name published later).
 *
 * Rank 0 installs "ping" at 10 and "pong" at 20 (ping first); rank 1 installs "pong" at
 * 100, then "ping" at 200. Each rank looks up "ping" at the other, sends it a request
 * carrying its own "pong" index, and waits for the pong. A missing name is
 * AM_ERR_BAD_ARG (every time: never cached); bad names (empty, 64 bytes, control
 * characters, non-ASCII), NULL pointers, a handler not installed, an unmapped index are
 * AM_ERR_BAD_ARG.
 */
#include "common.h"

#include <sys/wait.h>

#include "ramp_spmd.h"

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

/* One rank of the 3-rank job: publish, then look up every rank's name (no barrier). */
static int spmd_part(int argc, char **argv) {
  eb_t eb;
  ep_t ep;
  AM_SAFE(ramp_SPMDStartup(&argc, &argv, 3, 0, NULL, NULL, &eb, &ep));
  int rank = ramp_SPMDMyProc(), n = ramp_SPMDNumProcs();
  char suffix[32], svc[32];
  snprintf(suffix, sizeof suffix, " rank %d", rank);
  ct_label_suffix(suffix);
  PHASE("publish");
  snprintf(svc, sizeof svc, "svc-%d", rank);
  AM_SAFE(ramp_NamePublish(ep, svc));
  EXPECT_RC(ramp_NamePublish(ep, svc), AM_ERR_RESOURCE); /* published already */
  EXPECT_RC(ramp_NamePublish(ep, "no spaces"), AM_ERR_BAD_ARG);
  PHASE("look up");
  for (int r = 0; r < n; r++) {
    en_t got, want;
    snprintf(svc, sizeof svc, "svc-%d", r);
    AM_SAFE(ramp_NameLookup(svc, &got, 10000));
    AM_SAFE(AM_GetTranslationName(ep, r, &want));
    CHECK(ramp_enEqual(got, want), "svc-%d is %s, rank %d is %s", r, en_str(got), r, en_str(want));
  }
  en_t none;
  EXPECT_RC(ramp_NameLookup("never-published", &none, 100), AM_ERR_RESOURCE);
  ct_note("publish and look-up in the job: ok");
  AM_SAFE(ramp_SPMDBarrier());
  ramp_SPMDExit(0);
  return 1;
}

int main(int argc, char **argv) {
  ct_init("t_names", CT_WATCHDOG_SECS);
  if (ramp_SPMDIsWorker(argv) || (argc > 1 && strcmp(argv[1], "spmd") == 0))
    return spmd_part(argc, argv);

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
  if (P.rank != 0) return 0; /* pair_finish ends the child; never here */

  PHASE("a 3-rank job (master form)");
  pid_t pid = fork();
  CHECK(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    execl("/proc/self/exe", argv[0], "spmd", (char *)NULL);
    _exit(127);
  }
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid, "waitpid: %s", strerror(errno));
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the job ended with status 0x%x", st);
  ct_note("t_names: ok");
  return 0;
}
