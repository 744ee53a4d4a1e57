/* t_paths: a peer's paths from C (ramp_GetPeerPaths, ramp.h "paths").
 *
 * Two ranks, each with two rails (RAMP_RAILS=127.0.0.1,127.0.0.2: both loopback on
 * Linux; each rank binds its own ports on both), over UDP (the rails are UDP's).  After
 * an exchange of requests and replies each rank lists its paths to the other: one per
 * pair of our rails and the peer's addresses (2 x 2), exactly one current, at least one
 * ACTIVE, the current one active (or SUSPECT: its timeouts moved it, e.g. a rank off the
 * CPU; not asserted, it depends on timing) with a round trip, every state one of the five
 * RAMP_PATH_* (SUSPECT, 4, the last), the paths' bytes at least the payloads; a short array gets
 * only `max` records and the full count; bad arguments give AM_ERR_BAD_ARG, never a
 * crash.
 */
#include "common.h"

#define N 200
#define H_REQ 70
#define H_REP 71

static pair_t P;
static int reqs, reps;
static uint8_t payload[1024];

static void h_req(void *t, void *buf, size_t n, int32_t a) {
  (void)buf; (void)n; (void)a;
  reqs++;
  AM_SAFE(AM_Reply0(t, H_REP));
}
static void h_rep(void *t) { (void)t; reps++; }

static void setup(pair_t *p, void *arg) {
  (void)arg;
  AM_SAFE(AM_SetHandler(p->ep, H_REQ, h_req));
  AM_SAFE(AM_SetHandler(p->ep, H_REP, h_rep));
}

int main(void) {
  ct_init("t_paths", CT_WATCHDOG_SECS);
  /* the rails are UDP's: this test sets its transport whatever run.sh passes */
  setenv("RAMP_TRANSPORT", "udp", 1);
  setenv("RAMP_RAILS", "127.0.0.1,127.0.0.2", 1);
  memset(payload, 0x33, sizeof payload);
  PHASE("setup");
  spawn_pair(&P, AM_SEQ, 16, setup, NULL);

  PHASE("exchange");
  int peer = 1 - P.rank;
  for (int i = 0; i < N; i++) AM_SAFE(AM_RequestI1(P.ep, peer, H_REQ, payload, sizeof payload, i));
  POLL_UNTIL(P.eb, reps == N && reqs == N, 30.0, "replies %d requests %d", reps, reqs);
  pair_barrier(&P);
  /* confirming heartbeats of the other paths */
  poll_for_ms(P.eb, 500);
  pair_barrier(&P);

  PHASE("paths");
  /* the states: five distinct values, SUSPECT the last added (4) */
  CHECK(RAMP_PATH_UNCONFIRMED == 0 && RAMP_PATH_ACTIVE == 1 && RAMP_PATH_FAILED == 2 &&
            RAMP_PATH_PROBING == 3 && RAMP_PATH_SUSPECT == 4,
        "RAMP_PATH_* values");
  en_t name = P.name[peer];
  ramp_path_t paths[8];
  size_t count = 99;
  AM_SAFE(ramp_GetPeerPaths(P.ep, name, paths, 8, &count));
  CHECK(count == 4, "rank %d: %zu paths, expected 2 rails x 2 addresses", P.rank, count);
  int active = 0, current = 0;
  for (size_t i = 0; i < count; i++) {
    ramp_path_t *p = &paths[i];
    char l[64], r[64];
    AM_SAFE(ramp_enToString(p->local, l, sizeof l));
    AM_SAFE(ramp_enToString(p->remote, r, sizeof r));
    ct_note("rank %d path rail %u %s -> %s state %d current %d srtt %llu ns cwnd %llu rate %llu "
            "sent %llu acked %llu errors %u failures %u",
            P.rank, p->rail, l, r, p->state, p->current, (unsigned long long)p->srtt_ns,
            (unsigned long long)p->cwnd, (unsigned long long)p->rate,
            (unsigned long long)p->bytes_sent, (unsigned long long)p->bytes_acked, p->errors,
            p->failures);
    CHECK(p->rail < 2, "rail %u", p->rail);
    CHECK(p->state >= RAMP_PATH_UNCONFIRMED && p->state <= RAMP_PATH_SUSPECT, "state %d", p->state);
    CHECK(p->failures == 0, "rank %d: a path failed on loopback", P.rank);
    if (p->state == RAMP_PATH_ACTIVE || p->state == RAMP_PATH_SUSPECT) active++;
    if (p->current) {
      current++;
      CHECK(p->state == RAMP_PATH_ACTIVE || p->state == RAMP_PATH_SUSPECT,
            "the current path is not active: %d", p->state);
      CHECK(p->srtt_ns > 0 && p->cwnd > 0 && p->rate > 0, "current path's figures");
    }
  }
  CHECK(active >= 1, "rank %d: no active path", P.rank);
  uint64_t sent = 0, acked = 0;
  for (size_t i = 0; i < count; i++) sent += paths[i].bytes_sent, acked += paths[i].bytes_acked;
  CHECK(sent >= (uint64_t)N * sizeof payload && acked > 0, "bytes sent %llu acked %llu",
        (unsigned long long)sent, (unsigned long long)acked);
  CHECK(current == 1, "rank %d: %d current paths", P.rank, current);

  PHASE("short array and bad arguments");
  ramp_path_t one[2];
  memset(one, 0xAB, sizeof one);
  count = 0;
  AM_SAFE(ramp_GetPeerPaths(P.ep, name, one, 1, &count));
  CHECK(count == 4, "count %zu with max 1", count);
  const uint8_t *rest = (const uint8_t *)&one[1];
  for (size_t i = 0; i < sizeof one[1]; i++) CHECK(rest[i] == 0xAB, "wrote past max");
  count = 0;
  AM_SAFE(ramp_GetPeerPaths(P.ep, name, NULL, 0, &count));
  CHECK(count == 4, "count %zu with max 0", count);
  CHECK(ramp_GetPeerPaths(P.ep, name, NULL, 4, &count) == AM_ERR_BAD_ARG, "NULL paths");
  CHECK(ramp_GetPeerPaths(P.ep, name, paths, 8, NULL) == AM_ERR_BAD_ARG, "NULL count");
  CHECK(ramp_GetPeerPaths(NULL, name, paths, 8, &count) == AM_ERR_BAD_ARG, "NULL ep");
  en_t junk;
  memset(&junk, 0, sizeof junk);
  count = 7;
  CHECK(ramp_GetPeerPaths(P.ep, junk, paths, 8, &count) == AM_ERR_BAD_ARG, "no address");
  CHECK(count == 0, "count %zu for no peer", count);
  /* our own name: no association with ourselves */
  count = 7;
  CHECK(ramp_GetPeerPaths(P.ep, P.name[P.rank], paths, 8, &count) == AM_ERR_BAD_ARG, "no peer");
  CHECK(count == 0, "count %zu for no peer", count);

  pair_barrier(&P);
  pair_finish(&P, 0);
  return 0;
}
