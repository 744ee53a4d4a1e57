/* t_segbound: the segment's end is exact (spec §2.12 refusals, §2.11 loopback).
 *
 * A Long message (AM_RequestXfer, AM_RequestXferAsync, and a Long reply with
 * AM_ReplyXfer) whose bytes end exactly at the destination segment's length is
 * accepted: the handler runs once with the bytes at the right place. One that ends one
 * byte further is refused: on the remote path it comes back to the sender's handler 0
 * with EBADLENGTH (or EBADSEGOFF) and the right opcode, and no handler runs at the
 * receiver; on the loopback path (a request to one's own index) the call returns
 * AM_ERR_BAD_ARG and runs nothing. Guards against an off-by-one in the bound check
 * (src/am/endpoint.rs refusal() and deliver_loopback).
 */
#include "common.h"

#define SEGLEN 4096
#define N 64
#define H_LREQ 60
#define H_ACK 61
#define H_LREP 62
#define H_ASK_REPLY 63

static pair_t P;
static uint8_t seg[SEGLEN];
static int lreq_ran, ack_ran, lrep_ran, nrec;
static int rec_status[8], rec_op[8];
static int reply_rc = -1;

static uint8_t pat(int k, int salt) { return (uint8_t)(k * 13 + salt); }

static void returned_handler(int status, op_t opcode, void *token) {
  (void)token;
  CHECK(nrec < 8, "too many returned messages");
  rec_status[nrec] = status;
  rec_op[nrec] = (int)opcode;
  nrec++;
}

/* Long request: the bytes at buf must be the pattern `salt`, at offset `off`. */
static void h_lreq(void *token, void *buf, size_t n, int32_t off, int32_t salt) {
  CHECK(n == N, "long request: nbytes %zu", n);
  CHECK((uint8_t *)buf == seg + off, "long request: buf %p, expected seg + %d", buf, (int)off);
  for (int k = 0; k < N; k++)
    CHECK(((uint8_t *)buf)[k] == pat(k, salt), "long request: byte %d wrong", k);
  lreq_ran++;
  int self = 0;
  AM_SAFE(ramp_GetSourceId(token, &self));
  if (self != P.rank) AM_SAFE(AM_Reply0(token, H_ACK)); /* loopback requests need no reply */
}
static void h_ack(void *token) {
  (void)token;
  ack_ran++;
}
/* Asks the receiver to send a Long reply into our segment, ending at `off` + N. */
static void h_ask_reply(void *token, int32_t off) {
  uint8_t b[N];
  for (int k = 0; k < N; k++) b[k] = pat(k, 77);
  reply_rc = AM_ReplyXfer2(token, (uintptr_t)off, H_LREP, b, N, off, 77);
}
static void h_lrep(void *token, void *buf, size_t n, int32_t off, int32_t salt) {
  (void)token;
  CHECK(n == N && (uint8_t *)buf == seg + off, "long reply: buf %p n %zu, expected seg + %d", buf, n, (int)off);
  for (int k = 0; k < N; k++)
    CHECK(((uint8_t *)buf)[k] == pat(k, salt), "long reply: byte %d wrong", k);
  lrep_ran++;
}

static void setup(pair_t *p, void *arg) {
  (void)arg;
  AM_SAFE(AM_SetHandler(p->ep, 0, returned_handler));
  AM_SAFE(AM_SetHandler(p->ep, H_LREQ, h_lreq));
  AM_SAFE(AM_SetHandler(p->ep, H_ACK, h_ack));
  AM_SAFE(AM_SetHandler(p->ep, H_LREP, h_lrep));
  AM_SAFE(AM_SetHandler(p->ep, H_ASK_REPLY, h_ask_reply));
  AM_SAFE(AM_SetSeg(p->ep, seg, SEGLEN));
}

static void fill(uint8_t *b, int salt) {
  for (int k = 0; k < N; k++) b[k] = pat(k, salt);
}

static void expect_return(int i, int opcode, const char *what) {
  CHECK(rec_status[i] == EBADLENGTH || rec_status[i] == EBADSEGOFF,
        "%s: returned with %s, expected EBADLENGTH or EBADSEGOFF", what, ct_statusname(rec_status[i]));
  CHECK(rec_op[i] == opcode, "%s: returned with opcode %s, expected %s", what, ct_opname(rec_op[i]),
        ct_opname(opcode));
}

int main(void) {
  ct_init("t_segbound", CT_WATCHDOG_SECS);
  PHASE("setup");
  spawn_pair(&P, AM_SEQ, 4, setup, NULL);
  uint8_t b[N];
  const int at_end = SEGLEN - N, past_end = SEGLEN - N + 1;

  /* ---- remote: rank 0 sends into rank 1's segment -------------------------------- */
  if (P.rank == 0) {
    PHASE("remote: xfer ending exactly at the segment end");
    fill(b, 1);
    EXPECT_RC(AM_RequestXfer2(P.ep, 1, (uintptr_t)at_end, H_LREQ, b, N, at_end, 1), AM_OK);
    POLL_UNTIL_PROGRESS(P.eb, ack_ran == 1 || nrec > 0, ack_ran + nrec, 20.0, "remote xfer at the end: no answer");
    CHECK(nrec == 0, "an xfer ending exactly at the segment end was refused (%s)", ct_statusname(rec_status[0]));

    PHASE("remote: async xfer ending exactly at the segment end");
    fill(b, 2);
    EXPECT_RC(AM_RequestXferAsync2(P.ep, 1, (uintptr_t)at_end, H_LREQ, b, N, at_end, 2), AM_OK);
    POLL_UNTIL_PROGRESS(P.eb, ack_ran == 2 || nrec > 0, ack_ran + nrec, 20.0, "remote async xfer: no answer");
    CHECK(nrec == 0, "an async xfer ending exactly at the segment end was refused (%s)",
          ct_statusname(rec_status[0]));

    PHASE("remote: xfer ending one byte past the segment end");
    fill(b, 3);
    EXPECT_RC(AM_RequestXfer2(P.ep, 1, (uintptr_t)past_end, H_LREQ, b, N, past_end, 3), AM_OK);
    POLL_UNTIL_PROGRESS(P.eb, nrec == 1 || ack_ran > 2, ack_ran + nrec, 20.0,
                        "remote xfer past the end: never came back to handler 0");
    CHECK(ack_ran == 2, "an xfer ending one byte past the segment end was accepted");
    expect_return(0, AM_REQUEST_XFER_M, "xfer past the end");

    PHASE("remote: async xfer ending one byte past the segment end");
    fill(b, 4);
    EXPECT_RC(AM_RequestXferAsync2(P.ep, 1, (uintptr_t)past_end, H_LREQ, b, N, past_end, 4), AM_OK);
    POLL_UNTIL_PROGRESS(P.eb, nrec == 2 || ack_ran > 2, ack_ran + nrec, 20.0,
                        "remote async xfer past the end: never came back to handler 0");
    CHECK(ack_ran == 2, "an async xfer ending one byte past the segment end was accepted");
    expect_return(1, AM_REQUEST_XFER_M, "async xfer past the end");

    PHASE("remote: long replies into rank 0's segment");
    EXPECT_RC(AM_Request1(P.ep, 1, H_ASK_REPLY, at_end), AM_OK);
    POLL_UNTIL_PROGRESS(P.eb, lrep_ran == 1, lrep_ran, 20.0, "a long reply ending at the segment end never ran");
    EXPECT_RC(AM_Request1(P.ep, 1, H_ASK_REPLY, past_end), AM_OK);
  }
  pair_barrier(&P); /* rank 1 serves while polling in here */
  if (P.rank == 1) {
    CHECK(lreq_ran == 2, "rank 1: %d long request handlers ran, expected 2 (the two at the end)", lreq_ran);
    CHECK(reply_rc == AM_OK, "AM_ReplyXfer2 returned %s", ct_errname(reply_rc));
    /* the refused long reply comes back to rank 1's handler 0 */
    POLL_UNTIL_PROGRESS(P.eb, nrec == 1, nrec, 20.0, "a long reply one byte past the end never came back");
    expect_return(0, AM_REPLY_XFER_M, "long reply past the end");
  }
  pair_barrier(&P);
  poll_for_ms(P.eb, 100);
  if (P.rank == 0) CHECK(lrep_ran == 1, "rank 0: %d long reply handlers ran, expected 1", lrep_ran);

  /* ---- loopback: rank 0 sends to its own index 0 ----------------------------------- */
  if (P.rank == 0) {
    PHASE("loopback: xfer ending exactly at the segment end");
    lreq_ran = 0;
    fill(b, 5);
    EXPECT_RC(AM_RequestXfer2(P.ep, 0, (uintptr_t)at_end, H_LREQ, b, N, at_end, 5), AM_OK);
    CHECK(lreq_ran == 1, "loopback xfer ending exactly at the segment end: handler ran %d times", lreq_ran);
    fill(b, 6);
    EXPECT_RC(AM_RequestXferAsync2(P.ep, 0, (uintptr_t)at_end, H_LREQ, b, N, at_end, 6), AM_OK);
    CHECK(lreq_ran == 2, "loopback async xfer ending exactly at the segment end: handler ran %d times", lreq_ran);

    PHASE("loopback: xfer ending one byte past the segment end");
    memset(seg, 0, sizeof seg);
    fill(b, 7);
    EXPECT_RC(AM_RequestXfer2(P.ep, 0, (uintptr_t)past_end, H_LREQ, b, N, past_end, 7), AM_ERR_BAD_ARG);
    EXPECT_RC(AM_RequestXferAsync2(P.ep, 0, (uintptr_t)past_end, H_LREQ, b, N, past_end, 7), AM_ERR_BAD_ARG);
    CHECK(lreq_ran == 2, "a loopback xfer past the segment end ran its handler");
    for (int k = 0; k < SEGLEN; k++) CHECK(seg[k] == 0, "a refused loopback xfer wrote byte %d of the segment", k);
    CHECK(nrec == 2, "loopback refusals must not reach handler 0 (%d returns)", nrec);
  }
  pair_barrier(&P);
  pair_finish(&P, 50);
  printf("t_segbound: OK\n");
  return 0;
}
