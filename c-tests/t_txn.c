/* t_txn: transactions (ramp-ext.md section 3) between two processes over UDP.
 *
 * Rank 0 issues transactions with ramp_RequestTxn to rank 1 and checks their states:
 *   - every one ends PROCESSED and ACKED, its reply ran, ramp_TxnList finds it under
 *     PROCESSED until ramp_TxnRelease, and then ramp_TxnState refuses the id;
 *   - many at once (more than the network depth): each handler ran exactly once (rank 1
 *     counts its runs; under RAMP_FAULT_LOSS/DUP too);
 *   - a request to a handler rank 1 does not have: RAMP_ABANDON_REFUSED, NACKED, status
 *     EBADHANDLER, and handler 0 is not called;
 *   - with ramp_SetHandlerTimeout, a handler that runs past the bound:
 *     RAMP_ABANDON_HANDLER_TIMEOUT while PROCESSING (the handler blocks, polling, until
 *     rank 0 has seen that state and tells it over the socket pair to go on: no timing
 *     assumption; under loss its lost ack is sent again while it polls);
 *   - a plain request to that missing handler reaches handler 0, and
 *     ramp_ReturnedMayHaveRun says it did not run; the accessor refuses other tokens;
 *   - bad arguments: NULL outputs, unknown ids, a bad progress value, a timeout of 0.
 */
#include "common.h"

#define H_WORK 10
#define H_WORK_REP 11
#define H_BLOCK 12
#define H_MISSING 77
#define MANY 300

static pair_t P;
static volatile int runs, rep_sum, zero_calls, zero_may = -1, may_rc_other = -1;
static volatile int block_go;
static int block_fd;

static void h_work(void *token, int32_t a) {
  runs++;
  AM_SAFE(AM_Reply1(token, H_WORK_REP, a + 1));
}

static void h_work_rep(void *token, int32_t a) {
  int may = 0;
  may_rc_other = ramp_ReturnedMayHaveRun(token, &may);
  rep_sum += a;
}

/* Blocks until rank 0 writes one byte on the socket pair, polling meanwhile (AM_Poll
 * inside a handler): the target's protocol keeps working, so an ack lost on its way is
 * sent again and the initiator's probes are answered.  A handler that blocks without
 * polling stalls its endpoint: under loss its lost ack would never be resent. */
static void h_block(void *token) {
  (void)token;
  char c;
  ssize_t r;
  while ((r = read(block_fd, &c, 1)) < 0 && (errno == EAGAIN || errno == EINTR)) {
    AM_SAFE(AM_Poll(P.eb));
    sleep_ms(1);
  }
  CHECK(r == 1, "read from the socket pair: %s", r < 0 ? strerror(errno) : "end of file");
  runs++;
}

static void h_zero(int status, op_t op, void *token) {
  (void)op;
  zero_calls++;
  CHECK(status == EBADHANDLER, "handler 0 got status %s", ct_statusname(status));
  int may = -1;
  AM_SAFE(ramp_ReturnedMayHaveRun(token, &may));
  zero_may = may;
}

static void setup(pair_t *p, void *arg) {
  (void)arg;
  AM_SAFE(AM_SetHandler(p->ep, 0, (am_handler_fn_t)h_zero));
  AM_SAFE(AM_SetHandler(p->ep, H_WORK, (am_handler_fn_t)h_work));
  AM_SAFE(AM_SetHandler(p->ep, H_WORK_REP, (am_handler_fn_t)h_work_rep));
  AM_SAFE(AM_SetHandler(p->ep, H_BLOCK, (am_handler_fn_t)h_block));
  block_fd = p->fd;
}

static ramp_txn_state_t wait_end(ramp_txn_t t) {
  ramp_txn_state_t st;
  memset(&st, 0xff, sizeof st);
  int rc = ramp_TxnWait(P.ep, t, 30000, &st);
  CHECK(rc == AM_OK, "ramp_TxnWait(%" PRIu64 ") returned %s with progress %d", t, ct_errname(rc), (int)st.progress);
  return st;
}

static void check_processed(ramp_txn_t t) {
  ramp_txn_state_t st = wait_end(t);
  CHECK(st.ack == RAMP_ACK_ACKED && st.progress == RAMP_TXN_PROCESSED && st.abandon == RAMP_ABANDON_NONE &&
            st.status == 0,
        "transaction %" PRIu64 " ended as (ack %d, progress %d, abandon %d, status %d)", t, (int)st.ack,
        (int)st.progress, (int)st.abandon, st.status);
}

static size_t count_at(ramp_progress_t pr) {
  size_t n = 99999;
  AM_SAFE(ramp_TxnList(P.ep, pr, NULL, 0, &n));
  return n;
}

/* ramp_LogOpen's refusals, and a fresh log (the crash tests are tests/txn_crash.rs). */
static void log_open_checks(void) {
  char dir[] = "/tmp/t_txn_XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char path[256], junk[256];
  snprintf(path, sizeof path, "%s/ep.ramplog", dir);
  snprintf(junk, sizeof junk, "%s/junk", dir);
  FILE *f = fopen(junk, "w");
  CHECK(f != NULL, "create %s", junk);
  for (int i = 0; i < 5000; i++) fputs("not a log ", f);
  fclose(f);
  EXPECT_RC(ramp_LogOpen(P.ep, path), AM_ERR_RESOURCE); /* it has mapped peers */
  EXPECT_RC(ramp_LogOpen(P.ep, NULL), AM_ERR_BAD_ARG);
  eb_t eb;
  ep_t ep;
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb));
  en_t en;
  AM_SAFE(AM_AllocateEndpoint(eb, &ep, &en));
  EXPECT_RC(ramp_LogOpen(ep, junk), AM_ERR_RESOURCE); /* a foreign file: refused */
  AM_SAFE(ramp_LogOpen(ep, path));
  EXPECT_RC(ramp_LogOpen(ep, path), AM_ERR_RESOURCE); /* open already */
  AM_SAFE(AM_FreeBundle(eb));
  unlink(path);
  unlink(junk);
  rmdir(dir);
}

static void initiator(void) {
  int32_t a = 5;
  PHASE("ramp_LogOpen");
  log_open_checks();
  ramp_txn_t t = 0;
  ramp_txn_state_t st;

  PHASE("one transaction");
  AM_SAFE(ramp_RequestTxn(P.ep, 1, H_WORK, 0, NULL, 0, 0, 1, &a, &t));
  CHECK(t != 0, "transaction id 0");
  check_processed(t);
  CHECK(rep_sum == 6, "the reply ran: sum %d", rep_sum);
  CHECK(may_rc_other == AM_ERR_BAD_ARG, "ramp_ReturnedMayHaveRun on a reply's token gave %s",
        ct_errname(may_rc_other));
  CHECK(count_at(RAMP_TXN_PROCESSED) == 1, "listed as processed");
  ramp_txn_t ids[4] = {0};
  size_t n = 0;
  AM_SAFE(ramp_TxnList(P.ep, RAMP_TXN_PROCESSED, ids, 4, &n));
  CHECK(n == 1 && ids[0] == t, "ramp_TxnList gave %zu ids, first %" PRIu64, n, ids[0]);
  AM_SAFE(ramp_TxnRelease(P.ep, t));
  EXPECT_RC(ramp_TxnState(P.ep, t, &st), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_TxnRelease(P.ep, t), AM_ERR_BAD_ARG);
  CHECK(count_at(RAMP_TXN_PROCESSED) == 0, "released");

  PHASE("bad arguments");
  EXPECT_RC(ramp_RequestTxn(P.ep, 1, H_WORK, 0, NULL, 0, 0, 1, &a, NULL), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_RequestTxn(P.ep, 1, H_WORK, 7, NULL, 0, 0, 1, &a, &t), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_RequestTxn(NULL, 1, H_WORK, 0, NULL, 0, 0, 1, &a, &t), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_TxnState(P.ep, 123456789, &st), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_TxnState(P.ep, UINT64_MAX, &st), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_TxnList(P.ep, (ramp_progress_t)9, NULL, 0, &n), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_TxnList(P.ep, RAMP_TXN_PROCESSED, NULL, 3, &n), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_TxnList(P.ep, RAMP_TXN_PROCESSED, ids, 3, NULL), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_TxnWait(P.ep, 1, 0, NULL), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_ReturnedMayHaveRun(NULL, NULL), AM_ERR_BAD_ARG);

  PHASE("many transactions at once");
  static ramp_txn_t many[MANY];
  int want = 0;
  for (int i = 0; i < MANY; i++) {
    int32_t v = i;
    AM_SAFE(ramp_RequestTxn(P.ep, 1, H_WORK, 0, NULL, 0, 0, 1, &v, &many[i]));
    want += i + 1;
  }
  for (int i = 0; i < MANY; i++) check_processed(many[i]);
  CHECK(rep_sum == 6 + want, "reply sum %d, expected %d", rep_sum, 6 + want);
  CHECK(count_at(RAMP_TXN_PROCESSED) == MANY, "listed");
  for (int i = 0; i < MANY; i++) AM_SAFE(ramp_TxnRelease(P.ep, many[i]));

  PHASE("refused");
  AM_SAFE(ramp_RequestTxn(P.ep, 1, H_MISSING, 0, NULL, 0, 0, 0, NULL, &t));
  st = wait_end(t);
  CHECK(st.ack == RAMP_ACK_NACKED && st.abandon == RAMP_ABANDON_REFUSED && st.status == EBADHANDLER,
        "refused transaction: (ack %d, progress %d, abandon %d, status %d)", (int)st.ack, (int)st.progress,
        (int)st.abandon, st.status);
  CHECK(zero_calls == 0, "handler 0 ran for a transaction");
  AM_SAFE(ramp_TxnRelease(P.ep, t));

  PHASE("a plain request returned: did not run");
  AM_SAFE(AM_Request0(P.ep, 1, H_MISSING));
  POLL_UNTIL(P.eb, zero_calls == 1, 30, "the returned request did not reach handler 0");
  CHECK(zero_may == 0, "ramp_ReturnedMayHaveRun said %d for a refused request", zero_may);

  PHASE("handler timeout");
  AM_SAFE(ramp_SetHandlerTimeout(P.ep, 20000));
  AM_SAFE(ramp_RequestTxn(P.ep, 1, H_BLOCK, 0, NULL, 0, 0, 0, NULL, &t));
  st = wait_end(t);
  CHECK(st.ack == RAMP_ACK_ACKED && st.progress == RAMP_TXN_PROCESSING &&
            st.abandon == RAMP_ABANDON_HANDLER_TIMEOUT,
        "blocked handler: (ack %d, progress %d, abandon %d, status %d)", (int)st.ack, (int)st.progress,
        (int)st.abandon, st.status);
  EXPECT_RC(ramp_TxnWait(P.ep, t, 0, &st), AM_OK);
  AM_SAFE(ramp_SetHandlerTimeout(P.ep, 0));
  char go = 'g';
  CHECK(write(P.fd, &go, 1) == 1, "write to the socket pair");
  AM_SAFE(ramp_TxnRelease(P.ep, t));

  PHASE("a pending transaction times out in ramp_TxnWait");
  AM_SAFE(ramp_RequestTxn(P.ep, 1, H_BLOCK, 0, NULL, 0, 0, 0, NULL, &t));
  memset(&st, 0xff, sizeof st);
  EXPECT_RC(ramp_TxnWait(P.ep, t, 0, &st), AM_ERR_RESOURCE);
  CHECK(st.abandon == RAMP_ABANDON_NONE && st.progress != RAMP_TXN_PROCESSED, "state at the timeout");
  CHECK(write(P.fd, &go, 1) == 1, "write to the socket pair");
  check_processed(t);
  AM_SAFE(ramp_TxnRelease(P.ep, t));
}

int main(void) {
  ct_init("t_txn", CT_WATCHDOG_SECS);
  spawn_pair(&P, AM_SEQ, 8, setup, NULL);
  int total = 0;
  if (P.rank == 0) {
    initiator();
    int sent = 1 + MANY + 2; /* work, many work, two blocking handlers */
    pair_exchange(&P, &sent, &total, sizeof total);
    pair_fault_report(&P);
    pair_finish(&P, 100);
    return 0;
  }
  /* rank 1 polls until rank 0 says how many it ran */
  int mine, want = 0;
  /* the blocking handler reads the socket pair itself: the exchange waits after it */
  while (runs < 1 + MANY + 2) AM_SAFE(AM_Poll(P.eb));
  poll_for_ms(P.eb, 200); /* a handler that ran twice would show now */
  mine = runs;
  pair_exchange(&P, &mine, &want, sizeof want);
  CHECK(mine == want, "rank 1 ran %d handlers, %d transactions were sent", mine, want);
  pair_fault_report(&P);
  pair_finish(&P, 100);
  return 0;
}
