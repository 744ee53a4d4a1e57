/* t_return: a request handler sends its message back to the sender with
 * ramp_ReturnMessage(token, EBADARGS) -- what a handler does when the message does not
 * fit it (the Python package does it for a wrong argument count).  Checked: the
 * sender's handler 0 runs with EBADARGS, the request's opcode and its arguments intact;
 * no automatic reply follows; the credit comes back (more requests than the network
 * depth all return); the target keeps running and answers the next, fitting request;
 * bad uses are refused (a bad status, a token that is not live, a second answer after a
 * reply, a returned message returned again).
 */
#include "common.h"

#define H_PICKY 5 /* takes exactly 2 arguments: returns anything else */
#define H_ANSWER 6
#define DEPTH 4
#define NBAD 12

static pair_t P;
static volatile int returned, answers, bad_status, bad_args, auto_replies;
static volatile int refusals_checked;

/* called with the message's argument count (3 for the wrong ones: the extra argument
 * is ignored, as AM-2 handlers called with more arguments than they declare) */
static void picky(void *token, int32_t a, int32_t b) {
  (void)a;
  (void)b;
  int n = -1;
  AM_SAFE(ramp_GetTokenArgCount(token, &n));
  if (n != 2) {
    AM_SAFE(ramp_ReturnMessage(token, EBADARGS));
    /* answered now: neither a reply nor a second return */
    EXPECT_RC(AM_Reply0(token, H_ANSWER), AM_ERR_RESOURCE);
    EXPECT_RC(ramp_ReturnMessage(token, EBADARGS), AM_ERR_RESOURCE);
    return;
  }
  EXPECT_RC(ramp_ReturnMessage(token, 0), AM_ERR_BAD_ARG);    /* not an E* code */
  EXPECT_RC(ramp_ReturnMessage(token, 99), AM_ERR_BAD_ARG);
  AM_SAFE(AM_Reply0(token, H_ANSWER));
  EXPECT_RC(ramp_ReturnMessage(token, EBADARGS), AM_ERR_RESOURCE); /* already replied */
  refusals_checked = 1;
}

static void answer(void *token) {
  (void)token;
  answers++;
}

static void handler0(int status, op_t opcode, void *token) {
  int n = -1;
  AM_SAFE(ramp_GetTokenArgCount(token, &n));
  if (status != EBADARGS || opcode != AM_REQUEST_M) bad_status++;
  if (n != 3) bad_args++;
  EXPECT_RC(ramp_ReturnMessage(token, EBADARGS), AM_ERR_RESOURCE); /* a returned message */
  returned++;
}

static void setup(pair_t *p, void *arg) {
  (void)arg;
  AM_SAFE(AM_SetHandler(p->ep, 0, handler0));
  AM_SAFE(AM_SetHandler(p->ep, H_PICKY, picky));
  AM_SAFE(AM_SetHandler(p->ep, H_ANSWER, answer));
}

int main(void) {
  ct_init("t_return", CT_WATCHDOG_SECS);
  spawn_pair(&P, AM_SEQ, DEPTH, setup, NULL);
  EXPECT_RC(ramp_ReturnMessage(NULL, EBADARGS), AM_ERR_BAD_ARG); /* no live token */
  if (P.rank == 1) {
    /* more wrong requests than credits: each return frees its credit */
    for (int i = 0; i < NBAD; i++) AM_SAFE(AM_Request3(P.ep, 0, H_PICKY, i, 2 * i, 3 * i));
    POLL_UNTIL(P.eb, returned == NBAD, 30, "returned %d of %d", returned, NBAD);
    AM_SAFE(AM_Request2(P.ep, 0, H_PICKY, 1, 2)); /* the target still runs */
    POLL_UNTIL(P.eb, answers == 1, 30, "the fitting request was not answered");
    poll_for_ms(P.eb, 100);
    CHECK(bad_status == 0, "%d returned with another status or opcode", bad_status);
    CHECK(bad_args == 0, "%d returned without their 3 arguments", bad_args);
    CHECK(answers == 1 && auto_replies == 0, "answers %d (no automatic replies expected)", answers);
  }
  pair_finish(&P, 100);
  if (P.rank == 0) ct_note("returned %d requests with EBADARGS", NBAD);
  return 0;
}
