/* t_congestion: ECONGESTION (spec §3.2, ramp's choice: "ECONGESTION when the receiver
 * keeps refusing for lack of buffer").
 *
 * Rank 0 (receiver) has a receive buffer of 2 requests (RAMP_RECV_DEPTH=2) and refuses
 * a request for good after 3 NACKs (RAMP_NACK_LIMIT=3). Its request handler does not
 * return: it polls (handlers nest up to ramp's limit, then messages stay queued) until
 * rank 1 says "release" over the socketpair. Rank 1 sends N short requests; at least one
 * must come back to handler 0 with (ECONGESTION, AM_REQUEST_M); then it releases rank 0.
 * In the end every request is either answered exactly once or returned exactly once,
 * never both, and nothing is lost. First WARM round trips to a handler that answers at
 * once, so that over shm the requests after them find the ring up and go by its express
 * lane, whose refusals (the receiver full) come back to be sent again by the protocol's
 * path, NACKed and given up as any request (src/am/express/lane.rs).
 */
#include "common.h"

#include <fcntl.h>

#define H_SLOW 40
#define H_ANSWER 41
#define H_WARM 42
#define H_WARMED 43
#define N 24
#define WARM 20

static pair_t P;
static int release_pipe[2]; /* made before the fork: rank 1 writes, rank 0 reads */
static volatile int released;
static int seen[N];
static int answered[N];
static int returned, returned_bad;
static int warmed;

static void warm_handler(void *token, int32_t k) { AM_SAFE(AM_Reply1(token, H_WARMED, k)); }

static void warmed_handler(void *token, int32_t k) {
  (void)token;
  (void)k;
  warmed++;
}

static void slow_handler(void *token, int32_t k) {
  CHECK(k >= 0 && k < N, "request argument %d out of range", k);
  seen[k]++;
  while (!released) {
    AM_SAFE(AM_Poll(P.eb));
    char c;
    if (read(release_pipe[0], &c, 1) == 1) {
      CHECK(c == 'R', "unexpected byte %d on the release pipe", c);
      released = 1;
    }
  }
  AM_SAFE(AM_Reply1(token, H_ANSWER, k));
}

static void answer_handler(void *token, int32_t k) {
  (void)token;
  CHECK(k >= 0 && k < N, "reply argument %d out of range", k);
  answered[k]++;
}

static void returned_handler(int status, op_t opcode, void *token) {
  handler_t h;
  ramp_category_t cat;
  int is_req;
  AM_SAFE(ramp_GetTokenInfo(token, &h, &cat, &is_req));
  if (status != ECONGESTION || opcode != AM_REQUEST_M || h != H_SLOW || !is_req) {
    ct_note("returned: status %s opcode %d handler %d is_req %d", ramp_StatusName(status), opcode, h, is_req);
    returned_bad++;
  }
  returned++;
}

static void setup(pair_t *p, void *arg) {
  (void)arg;
  AM_SAFE(AM_SetHandler(p->ep, H_SLOW, slow_handler));
  AM_SAFE(AM_SetHandler(p->ep, H_ANSWER, answer_handler));
  AM_SAFE(AM_SetHandler(p->ep, 0, returned_handler));
  AM_SAFE(AM_SetHandler(p->ep, H_WARM, warm_handler));
  AM_SAFE(AM_SetHandler(p->ep, H_WARMED, warmed_handler));
}

int main(void) {
  ct_init("t_congestion", CT_WATCHDOG_SECS);
  setenv("RAMP_RECV_DEPTH", "2", 1);
  setenv("RAMP_NACK_LIMIT", "3", 1);
  setenv("RAMP_NACK_BACKOFF_US", "1000", 1);
  CHECK(pipe(release_pipe) == 0, "pipe");
  CHECK(fcntl(release_pipe[0], F_SETFL, O_NONBLOCK) == 0, "fcntl");
  PHASE("setup");
  spawn_pair(&P, AM_SEQ, 32, setup, NULL);
  if (P.rank == 1) {
    PHASE("round trips first");
    for (int k = 0; k < WARM; k++) {
      AM_SAFE(AM_Request1(P.ep, 0, H_WARM, k));
      POLL_UNTIL(P.eb, warmed > k, 30, "round trip %d not answered", k);
    }
    PHASE("sending to a receiver that keeps refusing");
    for (int k = 0; k < N; k++) AM_SAFE(AM_Request1(P.ep, 0, H_SLOW, k));
    POLL_UNTIL(P.eb, returned > 0, 30, "no request came back with ECONGESTION");
    char c = 'R';
    CHECK(write(release_pipe[1], &c, 1) == 1, "write release");
    PHASE("after the release");
    int done = 0;
    ct_waiting(__FILE__, __LINE__, "every request answered or returned");
    while (done < N) {
      AM_SAFE(AM_Poll(P.eb));
      done = returned;
      for (int k = 0; k < N; k++) done += answered[k];
    }
    int twice = 0;
    for (int k = 0; k < N; k++) twice += answered[k] > 1;
    CHECK(twice == 0, "%d requests answered twice", twice);
    CHECK(returned_bad == 0, "%d returned messages with the wrong status/opcode", returned_bad);
    CHECK(done == N, "answered + returned = %d of %d (a message was lost)", done, N);
    ct_note("%d of %d requests returned with ECONGESTION, %d answered", returned, N, N - returned);
  } else {
    PHASE("receiving");
    POLL_UNTIL(P.eb, released, 30, "never released");
    for (int k = 0; k < N; k++) CHECK(seen[k] <= 1, "request %d handled %d times", k, seen[k]);
  }
  pair_finish(&P, 200);
  if (P.rank == 0) {
    int handled = 0;
    for (int k = 0; k < N; k++) handled += seen[k];
    ct_note("receiver handled %d requests", handled);
  }
  printf("t_congestion: OK\n");
  return 0;
}
