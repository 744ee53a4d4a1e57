/* t_par: an AM_PAR bundle used by several threads at once (am.h "Threads").
 *
 * Rank 0 runs NT threads on one AM_PAR bundle/endpoint. Each thread sends K short
 * requests to rank 1 and L loopback requests to itself, and polls; rank 1 (one thread)
 * answers, and also sends C requests of its own to rank 0, which whichever rank-0 thread
 * polls must serve. All counts must be exact (each message handled exactly once).
 * Meaningful under fault injection.
 */
#include "common.h"

#include <pthread.h>
#include <stdatomic.h>

#define NT 4
#define H_REQ 70
#define H_REP 71
#define H_LREQ 72
#define H_LREP 73
#define H_CREQ 74
#define H_CREP 75

static pair_t P;
static int K, L, C;
static atomic_int *seen_req;        /* rank 1: [NT*K] request handler runs */
static atomic_int *seen_rep;        /* rank 0: [NT*K] reply handler runs */
static atomic_int rep_count[NT];    /* rank 0: replies per thread */
static atomic_int lreq_count[NT], lrep_count[NT];
static atomic_int creq_count, crep_count, req_total;
static atomic_int lreq_wrong_thread;
static _Thread_local int my_tid = -1;

static void h_req(void *token, int32_t t, int32_t i) {
  CHECK(t >= 0 && t < NT && i >= 0 && i < K, "request (%d, %d) out of range", (int)t, (int)i);
  atomic_fetch_add(&seen_req[t * K + i], 1);
  atomic_fetch_add(&req_total, 1);
  AM_SAFE(AM_Reply2(token, H_REP, t, i));
}
static void h_rep(void *token, int32_t t, int32_t i) {
  (void)token;
  CHECK(t >= 0 && t < NT && i >= 0 && i < K, "reply (%d, %d) out of range", (int)t, (int)i);
  atomic_fetch_add(&seen_rep[t * K + i], 1);
  atomic_fetch_add(&rep_count[t], 1);
}
static void h_lreq(void *token, int32_t t, int32_t i) {
  (void)i;
  if (t != my_tid) atomic_fetch_add(&lreq_wrong_thread, 1); /* loopback runs in the calling thread */
  atomic_fetch_add(&lreq_count[t], 1);
  AM_SAFE(AM_Reply2(token, H_LREP, t, i));
}
static void h_lrep(void *token, int32_t t, int32_t i) {
  (void)token;
  (void)i;
  atomic_fetch_add(&lrep_count[t], 1);
}
static void h_creq(void *token, int32_t i) {
  (void)i;
  atomic_fetch_add(&creq_count, 1);
  AM_SAFE(AM_Reply1(token, H_CREP, i));
}
static void h_crep(void *token, int32_t i) {
  (void)token;
  (void)i;
  atomic_fetch_add(&crep_count, 1);
}

static void returned_handler(int status, op_t opcode, void *token) {
  (void)token;
  FAIL("unexpected returned message: %s %s", ct_statusname(status), ct_opname((int)opcode));
}

static void setup(pair_t *p, void *arg) {
  (void)arg;
  ep_t ep = p->ep;
  AM_SAFE(AM_SetHandler(ep, 0, returned_handler));
  AM_SAFE(AM_SetHandler(ep, H_REQ, h_req));
  AM_SAFE(AM_SetHandler(ep, H_REP, h_rep));
  AM_SAFE(AM_SetHandler(ep, H_LREQ, h_lreq));
  AM_SAFE(AM_SetHandler(ep, H_LREP, h_lrep));
  AM_SAFE(AM_SetHandler(ep, H_CREQ, h_creq));
  AM_SAFE(AM_SetHandler(ep, H_CREP, h_crep));
}

static void *worker(void *arg) {
  int t = (int)(intptr_t)arg;
  my_tid = t;
  int lsent = 0;
  for (int i = 0; i < K; i++) {
    int rc = AM_Request2(P.ep, 1, H_REQ, t, i);
    CHECK(rc == AM_OK, "thread %d: request %d returned %s", t, i, ct_errname(rc));
    if (lsent < L && (i % 4 == 0 || K - i <= L - lsent)) {
      int before = atomic_load(&lrep_count[t]);
      rc = AM_Request2(P.ep, 0, H_LREQ, t, lsent);
      CHECK(rc == AM_OK, "thread %d: loopback request %d returned %s", t, lsent, ct_errname(rc));
      CHECK(atomic_load(&lrep_count[t]) == before + 1,
            "thread %d: loopback reply handler did not run inside the request call", t);
      lsent++;
    }
    if (i % 16 == 0) {
      rc = AM_Poll(P.eb);
      CHECK(rc == AM_OK, "thread %d: AM_Poll returned %s", t, ct_errname(rc));
    }
  }
  while (lsent < L) {
    AM_SAFE(AM_Request2(P.ep, 0, H_LREQ, t, lsent));
    lsent++;
  }
  while (atomic_load(&rep_count[t]) < K) {
    int rc = AM_Poll(P.eb);
    CHECK(rc == AM_OK, "thread %d: AM_Poll returned %s", t, ct_errname(rc));
  }
  return NULL;
}

int main(void) {
  ct_init("t_par", CT_WATCHDOG_SECS);
  K = (int)env_long("RAMP_CTEST_PAR_K", 2000);
  L = K / 4;
  C = K;
  seen_req = calloc((size_t)(NT * K), sizeof(atomic_int));
  seen_rep = calloc((size_t)(NT * K), sizeof(atomic_int));
  CHECK(seen_req && seen_rep, "calloc");
  PHASE("setup");
  spawn_pair(&P, AM_PAR, 8, setup, NULL);
  double t0 = now_sec();
  if (P.rank == 0) {
    PHASE("threads running");
    pthread_t th[NT];
    for (int t = 0; t < NT; t++)
      CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    PHASE("rank 0 serving the remaining peer requests");
    POLL_UNTIL(P.eb, atomic_load(&creq_count) >= C, 30.0, "rank 0 served %d of %d peer requests",
               atomic_load(&creq_count), C);
    ct_note("%d threads x (%d requests + %d loopback) and %d peer requests in %.2f s", NT, K, L, C, now_sec() - t0);
  } else {
    PHASE("rank 1 sending and serving");
    for (int i = 0; i < C; i++) AM_SAFE(AM_Request1(P.ep, 0, H_CREQ, i));
    POLL_UNTIL(P.eb, atomic_load(&crep_count) >= C && atomic_load(&req_total) >= NT * K, 40.0,
               "rank 1: %d of %d replies, %d of %d requests served", atomic_load(&crep_count), C,
               atomic_load(&req_total), NT * K);
  }
  PHASE("settling");
  pair_barrier(&P);
  poll_for_ms(P.eb, 200);
  if (P.rank == 0) {
    for (int t = 0; t < NT; t++) {
      CHECK(atomic_load(&rep_count[t]) == K, "thread %d: %d replies, expected %d", t, atomic_load(&rep_count[t]), K);
      CHECK(atomic_load(&lreq_count[t]) == L && atomic_load(&lrep_count[t]) == L,
            "thread %d: loopback %d requests / %d replies, expected %d", t, atomic_load(&lreq_count[t]),
            atomic_load(&lrep_count[t]), L);
    }
    for (int k = 0; k < NT * K; k++)
      CHECK(atomic_load(&seen_rep[k]) == 1, "reply (%d, %d) ran %d times", k / K, k % K, atomic_load(&seen_rep[k]));
    CHECK(atomic_load(&creq_count) == C, "rank 0 served %d peer requests, expected %d", atomic_load(&creq_count), C);
    CHECK(atomic_load(&lreq_wrong_thread) == 0, "%d loopback handlers ran in another thread than the caller",
          atomic_load(&lreq_wrong_thread));
  } else {
    for (int k = 0; k < NT * K; k++)
      CHECK(atomic_load(&seen_req[k]) == 1, "request (%d, %d) ran %d times", k / K, k % K,
            atomic_load(&seen_req[k]));
    CHECK(atomic_load(&crep_count) == C, "rank 1 got %d replies, expected %d", atomic_load(&crep_count), C);
  }
  pair_fault_report(&P);
  pair_finish(&P, 50);
  printf("t_par: OK\n");
  return 0;
}
