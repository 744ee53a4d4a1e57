/* t_returned: returned (undeliverable) messages and handler 0 (spec §1.1, §2.5, §2.12).
 *
 * Rank 0 is always the requester S, rank 1 the receiver/replier R. Each scenario uses a
 * fresh bundle and endpoint on both sides, configured so that one check fails:
 *   requests refused by R  -> S's handler 0 gets (status, AM_REQUEST_{M,IM,XFER_M}, token)
 *   replies refused by S   -> R's handler 0 gets (status, AM_REPLY_{M,IM,XFER_M}, token)
 * and the token of the returned message must answer AM_GetSourceEndpoint (the refusing
 * peer), AM_GetMsgTag (the tag the message carried), ramp_GetTokenInfo (handler,
 * category, is_req of the bounced message), ramp_GetSourceId; replying from handler 0
 * must fail with AM_ERR_RESOURCE. Requests are sent 3 times with depth 1, so a request
 * credit that is not released by the return makes the test hang (-> alarm).
 *
 * Default handler 0 (contract: "prints the message and aborts"): in a subprocess with two
 * endpoints, a request to an unregistered handler must end the process with SIGABRT
 * after printing something on stderr.
 *
 * EUNREACHABLE: in a separate process pair with RAMP_RETRY_LIMIT=4 RAMP_RTO_MAX_US=20000,
 * the peer is killed and requests to it must come back to handler 0 with EUNREACHABLE,
 * releasing their credit.
 */
#include "common.h"

#include <sys/wait.h>

#define H_REQ_BASE 20 /* + category: request handlers at R */
#define H_REP_BASE 30 /* + category: reply handlers at S */
#define H_UNREGISTERED_REQ 77
#define H_UNREGISTERED_REP 78
#define SEGLEN 4096
#define NSEND 3

enum { K_REQUEST, K_REPLY, K_POSITIVE };
enum { F_BADHANDLER, F_BADTAG, F_NONETAG, F_NOSEG, F_SEGLEN, F_SEGBEYOND, F_NOTMAPPED, F_ALLTAG, F_SETTAG };

typedef struct {
  const char *name;
  int kind;
  int fault;
  int cat;
  int status; /* expected E* code */
} scenario_t;

static const scenario_t scenarios[] = {
    {"request to unregistered handler, short", K_REQUEST, F_BADHANDLER, 0, EBADHANDLER},
    {"request to unregistered handler, medium", K_REQUEST, F_BADHANDLER, 1, EBADHANDLER},
    {"request to unregistered handler, long", K_REQUEST, F_BADHANDLER, 2, EBADHANDLER},
    {"request with wrong tag, short", K_REQUEST, F_BADTAG, 0, EBADTAG},
    {"request with wrong tag, medium", K_REQUEST, F_BADTAG, 1, EBADTAG},
    {"request with wrong tag, long", K_REQUEST, F_BADTAG, 2, EBADTAG},
    {"request to receiver with tag AM_NONE, short", K_REQUEST, F_NONETAG, 0, EBADTAG},
    {"request to receiver with tag AM_NONE, medium", K_REQUEST, F_NONETAG, 1, EBADTAG},
    {"request to receiver with tag AM_NONE, long", K_REQUEST, F_NONETAG, 2, EBADTAG},
    {"xfer request to receiver without segment", K_REQUEST, F_NOSEG, 2, EBADSEGOFF},
    {"xfer request past the receiver's segment end", K_REQUEST, F_SEGLEN, 2, EBADLENGTH},
    {"xfer request with offset beyond the receiver's segment", K_REQUEST, F_SEGBEYOND, 2, EBADLENGTH},
    {"request from endpoint the receiver has not mapped, short", K_REQUEST, F_NOTMAPPED, 0, EBADENDPOINT},
    {"request from endpoint the receiver has not mapped, medium", K_REQUEST, F_NOTMAPPED, 1, EBADENDPOINT},
    {"request from endpoint the receiver has not mapped, long", K_REQUEST, F_NOTMAPPED, 2, EBADENDPOINT},
    {"reply to handler unregistered at the requester, short", K_REPLY, F_BADHANDLER, 0, EBADHANDLER},
    {"reply to handler unregistered at the requester, medium", K_REPLY, F_BADHANDLER, 1, EBADHANDLER},
    {"reply to handler unregistered at the requester, long", K_REPLY, F_BADHANDLER, 2, EBADHANDLER},
    {"reply with wrong tag, short", K_REPLY, F_BADTAG, 0, EBADTAG},
    {"reply with wrong tag, medium", K_REPLY, F_BADTAG, 1, EBADTAG},
    {"reply with wrong tag, long", K_REPLY, F_BADTAG, 2, EBADTAG},
    {"xfer reply to requester without segment", K_REPLY, F_NOSEG, 2, EBADSEGOFF},
    {"xfer reply past the requester's segment end", K_REPLY, F_SEGLEN, 2, EBADLENGTH},
    {"request after ramp_SetTranslationTag to a wrong tag (then restored)", K_REQUEST, F_SETTAG, 0, EBADTAG},
    {"receiver with tag AM_ALL accepts any tag, short", K_POSITIVE, F_ALLTAG, 0, 0},
    {"receiver with tag AM_ALL accepts any tag, long", K_POSITIVE, F_ALLTAG, 2, 0},
};
#define NSCEN ((int)(sizeof scenarios / sizeof scenarios[0]))

static const int req_opcode[3] = {AM_REQUEST_M, AM_REQUEST_IM, AM_REQUEST_XFER_M};
static const int rep_opcode[3] = {AM_REPLY_M, AM_REPLY_IM, AM_REPLY_XFER_M};

typedef struct {
  int status, opcode;
  int info_rc, h, cat, is_req;
  int src_rc;
  en_t src;
  int tag_rc;
  tag_t tag;
  int id_rc, id;
  int dest_rc;
  ep_t dest;
  int reply_rc;
} ret_rec_t;

#define MAXREC 16
static ret_rec_t recs[MAXREC];
static int nrec;

static pair_t P;
static const scenario_t *cur;
static ep_t cur_ep;
static uint8_t seg_s[SEGLEN], seg_r[SEGLEN];
static int r_req_ran, s_rep_ran;
static tag_t r_seen_tag;

static void returned_handler(int status, op_t opcode, void *token) {
  if (nrec >= MAXREC) FAIL("too many returned messages (%d): status %s opcode %s", nrec, ct_statusname(status),
                           ct_opname((int)opcode));
  ret_rec_t *r = &recs[nrec++];
  memset(r, 0, sizeof *r);
  r->status = status;
  r->opcode = (int)opcode;
  handler_t h = 0;
  ramp_category_t c = ramp_NumCategories;
  r->is_req = -1;
  r->info_rc = ramp_GetTokenInfo(token, &h, &c, &r->is_req);
  r->h = h;
  r->cat = (int)c;
  r->src_rc = AM_GetSourceEndpoint(token, &r->src);
  r->tag_rc = AM_GetMsgTag(token, &r->tag);
  r->id = -1;
  r->id_rc = ramp_GetSourceId(token, &r->id);
  r->dest_rc = AM_GetDestEndpoint(token, &r->dest);
  r->reply_rc = AM_Reply0(token, 1); /* replying to a returned message is not allowed */
}

static void check_rec(const ret_rec_t *r, int status, int opcode, int handler, int cat, int is_req,
                      en_t refuser, tag_t tag, int id, ep_t dest) {
  CHECK(r->status == status, "%s: handler 0 status %d (%s), expected %d (%s)", cur->name, r->status,
        ct_statusname(r->status), status, ct_statusname(status));
  CHECK(r->opcode == opcode, "%s: handler 0 opcode %d (%s), expected %d (%s)", cur->name, r->opcode,
        ct_opname(r->opcode), opcode, ct_opname(opcode));
  CHECK(r->info_rc == AM_OK, "%s: ramp_GetTokenInfo on the returned token: %s", cur->name, ct_errname(r->info_rc));
  CHECK(r->h == handler && r->cat == cat && !!r->is_req == !!is_req,
        "%s: ramp_GetTokenInfo on the returned token gave (handler %d, cat %d, is_req %d), expected (%d, %d, %d)",
        cur->name, r->h, r->cat, r->is_req, handler, cat, is_req);
  CHECK(r->src_rc == AM_OK, "%s: AM_GetSourceEndpoint on the returned token: %s", cur->name, ct_errname(r->src_rc));
  CHECK(ramp_enEqual(r->src, refuser), "%s: AM_GetSourceEndpoint on the returned token gave %s, expected %s",
        cur->name, en_str(r->src), en_str(refuser));
  CHECK(r->tag_rc == AM_OK, "%s: AM_GetMsgTag on the returned token: %s", cur->name, ct_errname(r->tag_rc));
  CHECK(r->tag == tag, "%s: AM_GetMsgTag on the returned token gave 0x%" PRIx64 ", expected 0x%" PRIx64, cur->name,
        (uint64_t)r->tag, (uint64_t)tag);
  CHECK(r->id_rc == AM_OK && r->id == id, "%s: ramp_GetSourceId on the returned token gave %s/%d, expected %d",
        cur->name, ct_errname(r->id_rc), r->id, id);
  CHECK(r->dest_rc == AM_OK && r->dest == dest, "%s: AM_GetDestEndpoint on the returned token gave %s/%p, expected %p",
        cur->name, ct_errname(r->dest_rc), (void *)r->dest, (void *)dest);
  CHECK(r->reply_rc == AM_ERR_RESOURCE, "%s: replying from handler 0 returned %d (%s), expected AM_ERR_RESOURCE",
        cur->name, r->reply_rc, ct_errname(r->reply_rc));
}

/* R's request handlers: they reply with the scenario's category */
static uint8_t rep_payload[256];
static void do_reply(void *token, int cat) {
  int h = (cur->kind == K_REPLY && cur->fault == F_BADHANDLER) ? H_UNREGISTERED_REP : H_REP_BASE + cat;
  int rc;
  if (cat == 0) {
    rc = AM_Reply1(token, (handler_t)h, 0x1234);
  } else if (cat == 1) {
    rc = AM_ReplyI1(token, (handler_t)h, rep_payload, 16, 0x1234);
  } else {
    uintptr_t off = 0;
    size_t n = 16;
    if (cur->fault == F_SEGLEN) {
      off = 4000;
      n = 200;
    }
    rc = AM_ReplyXfer1(token, off, (handler_t)h, rep_payload, n, 0x1234);
  }
  CHECK(rc == AM_OK, "%s: reply call returned %s (the refusal happens at the requester)", cur->name, ct_errname(rc));
}
static void r_sreq(void *token, int32_t a) {
  CHECK(a == 0x4242, "short request arg %d", (int)a);
  r_req_ran++;
  AM_SAFE(AM_GetMsgTag(token, &r_seen_tag));
  do_reply(token, 0);
}
static void r_mreq(void *token, void *buf, size_t n, int32_t a) {
  (void)buf;
  CHECK(a == 0x4242 && n == 16, "medium request arg %d n %zu", (int)a, n);
  r_req_ran++;
  AM_SAFE(AM_GetMsgTag(token, &r_seen_tag));
  do_reply(token, 1);
}
static void r_lreq(void *token, void *buf, size_t n, int32_t a) {
  (void)buf;
  CHECK(a == 0x4242, "long request arg %d n %zu", (int)a, n);
  r_req_ran++;
  AM_SAFE(AM_GetMsgTag(token, &r_seen_tag));
  do_reply(token, 2);
}
static void s_srep(void *token, int32_t a) {
  (void)token;
  CHECK(a == 0x1234, "short reply arg %d", (int)a);
  s_rep_ran++;
}
static void s_mrep(void *token, void *buf, size_t n, int32_t a) {
  (void)token;
  (void)buf;
  CHECK(a == 0x1234 && n == 16, "medium reply arg %d n %zu", (int)a, n);
  s_rep_ran++;
}
static void s_lrep(void *token, void *buf, size_t n, int32_t a) {
  (void)token;
  (void)buf;
  (void)n;
  CHECK(a == 0x1234, "long reply arg %d", (int)a);
  s_rep_ran++;
}

static int send_request(ep_t ep, int cat, int handler, int k) {
  static uint8_t payload[256];
  memset(payload, k, sizeof payload);
  if (cat == 0) return AM_Request1(ep, 1, (handler_t)handler, 0x4242);
  if (cat == 1) return AM_RequestI1(ep, 1, (handler_t)handler, payload, 16, 0x4242);
  uintptr_t off = 0;
  size_t n = 16;
  if (cur->kind == K_REQUEST && cur->fault == F_SEGLEN) {
    off = 4000;
    n = 200;
  } else if (cur->kind == K_REQUEST && cur->fault == F_SEGBEYOND) {
    off = 5000;
    n = 8;
  }
  return AM_RequestXfer1(ep, 1, off, (handler_t)handler, payload, n, 0x4242);
}

static void run_scenario(const scenario_t *sc) {
  cur = sc;
  PHASE(sc->name);
  nrec = 0;
  r_req_ran = s_rep_ran = 0;
  r_seen_tag = 0;
  eb_t eb;
  ep_t ep;
  en_t names[2];
  pair_alloc(&P, AM_SEQ, &eb, &ep, names);
  cur_ep = ep;
  const tag_t tag_s = pair_tag(0), tag_r = pair_tag(1);
  tag_t s_maps_r = tag_r, r_maps_s = tag_s;
  if (sc->kind == K_REQUEST && sc->fault == F_BADTAG) s_maps_r = tag_r ^ 0x10;
  if (sc->kind == K_REPLY && sc->fault == F_BADTAG) r_maps_s = tag_s ^ 0x10;
  if (sc->fault == F_ALLTAG) s_maps_r = 0x999;
  const tag_t s_sets_r = sc->fault == F_SETTAG ? tag_r ^ 0x20 : s_maps_r; /* after SetExpectedResources */
  int depth = sc->kind == K_REQUEST ? 1 : 4;

  AM_SAFE(AM_SetHandler(ep, 0, returned_handler));
  if (P.rank == 0) { /* S */
    AM_SAFE(AM_SetTag(ep, tag_s));
    if (!(sc->kind == K_REPLY && sc->fault == F_NOSEG)) AM_SAFE(AM_SetSeg(ep, seg_s, SEGLEN));
    AM_SAFE(AM_Map(ep, 1, names[1], s_maps_r));
    AM_SAFE(AM_SetHandler(ep, H_REP_BASE + 0, s_srep));
    AM_SAFE(AM_SetHandler(ep, H_REP_BASE + 1, s_mrep));
    AM_SAFE(AM_SetHandler(ep, H_REP_BASE + 2, s_lrep));
  } else { /* R */
    tag_t t = 0xDEAD;
    AM_SAFE(AM_GetTag(ep, &t));
    CHECK(t == AM_NONE, "a new endpoint's tag is 0x%" PRIx64 ", expected AM_NONE", (uint64_t)t);
    if (sc->fault == F_ALLTAG)
      AM_SAFE(AM_SetTag(ep, AM_ALL));
    else if (!(sc->kind == K_REQUEST && sc->fault == F_NONETAG))
      AM_SAFE(AM_SetTag(ep, tag_r));
    if (!(sc->kind == K_REQUEST && sc->fault == F_NOSEG)) AM_SAFE(AM_SetSeg(ep, seg_r, SEGLEN));
    if (sc->fault == F_NOTMAPPED)
      AM_SAFE(AM_Map(ep, 1, names[1], tag_r)); /* only itself */
    else
      AM_SAFE(AM_Map(ep, 0, names[0], r_maps_s));
    AM_SAFE(AM_SetHandler(ep, H_REQ_BASE + 0, r_sreq));
    AM_SAFE(AM_SetHandler(ep, H_REQ_BASE + 1, r_mreq));
    AM_SAFE(AM_SetHandler(ep, H_REQ_BASE + 2, r_lreq));
  }
  AM_SAFE(AM_SetExpectedResources(ep, 2, depth));
  if (P.rank == 0 && sc->fault == F_SETTAG) {
    AM_SAFE(ramp_SetTranslationTag(ep, 1, s_sets_r));
    tag_t t = 0;
    AM_SAFE(AM_GetTranslationTag(ep, 1, &t));
    CHECK(t == s_sets_r, "AM_GetTranslationTag after ramp_SetTranslationTag: 0x%" PRIx64, (uint64_t)t);
  }
  pair_barrier_eb(&P, eb);

  int req_handler = (sc->kind == K_REQUEST && sc->fault == F_BADHANDLER) ? H_UNREGISTERED_REQ : H_REQ_BASE + sc->cat;
  if (sc->kind == K_REQUEST) {
    if (P.rank == 0) {
      for (int k = 0; k < NSEND; k++) {
        /* depth 1: the 2nd and 3rd calls block until the previous request's credit is
         * released by its return (a hang here means the credit is never released) */
        int rc = send_request(ep, sc->cat, req_handler, k);
        CHECK(rc == AM_OK, "%s: request %d returned %s", sc->name, k, ct_errname(rc));
      }
      POLL_UNTIL(eb, nrec >= NSEND, 10.0, "%s: only %d of %d returned messages reached handler 0", sc->name,
                 nrec, NSEND);
      poll_for_ms(eb, 30);
      CHECK(nrec == NSEND, "%s: handler 0 ran %d times, expected %d", sc->name, nrec, NSEND);
      for (int k = 0; k < NSEND; k++)
        check_rec(&recs[k], sc->status, req_opcode[sc->cat], req_handler, sc->cat, 1, names[1], s_sets_r, 1, ep);
      CHECK(s_rep_ran == 0, "%s: a reply handler ran", sc->name);
      if (sc->fault == F_SETTAG) { /* restore the right tag: now it is delivered */
        AM_SAFE(ramp_SetTranslationTag(ep, 1, tag_r));
        AM_SAFE(send_request(ep, sc->cat, req_handler, 9));
        POLL_UNTIL(eb, s_rep_ran == 1, 10.0, "%s: no reply after restoring the tag", sc->name);
      }
    }
    pair_barrier_eb(&P, eb);
    if (P.rank == 1) {
      int want = sc->fault == F_SETTAG ? 1 : 0;
      CHECK(r_req_ran == want, "%s: the receiver's request handler ran %d times, expected %d", sc->name, r_req_ran,
            want);
      CHECK(nrec == 0, "%s: the receiver's handler 0 ran (%s, %s)", sc->name, ct_statusname(recs[0].status),
            ct_opname(recs[0].opcode));
    }
  } else if (sc->kind == K_REPLY) {
    if (P.rank == 0) {
      int rc = send_request(ep, sc->cat, req_handler, 0);
      CHECK(rc == AM_OK, "%s: request returned %s", sc->name, ct_errname(rc));
      pair_barrier_eb(&P, eb); /* polls while R waits for its returned reply */
      CHECK(s_rep_ran == 0, "%s: the refused reply ran the requester's reply handler", sc->name);
      if (nrec) /* unspecified: the requester may later give up on the unreplied request */
        ct_note("note: %s: requester's handler 0 also ran: %s %s", sc->name, ct_statusname(recs[0].status),
                ct_opname(recs[0].opcode));
    } else {
      POLL_UNTIL(eb, nrec >= 1, 10.0, "%s: the refused reply never came back to the replier's handler 0", sc->name);
      poll_for_ms(eb, 30);
      CHECK(nrec == 1, "%s: replier's handler 0 ran %d times, expected 1", sc->name, nrec);
      CHECK(r_req_ran == 1, "%s: request handler ran %d times", sc->name, r_req_ran);
      int h = sc->fault == F_BADHANDLER ? H_UNREGISTERED_REP : H_REP_BASE + sc->cat;
      check_rec(&recs[0], sc->status, rep_opcode[sc->cat], h, sc->cat, 0, names[0], r_maps_s, 0, ep);
      pair_barrier_eb(&P, eb);
    }
  } else { /* positive */
    if (P.rank == 0) {
      for (int k = 0; k < NSEND; k++) AM_SAFE(send_request(ep, sc->cat, req_handler, k));
      POLL_UNTIL(eb, s_rep_ran >= NSEND, 10.0, "%s: %d of %d replies", sc->name, s_rep_ran, NSEND);
      CHECK(nrec == 0, "%s: handler 0 ran: %s %s", sc->name, ct_statusname(recs[0].status), ct_opname(recs[0].opcode));
    }
    pair_barrier_eb(&P, eb);
    if (P.rank == 1) {
      CHECK(r_req_ran == NSEND, "%s: request handler ran %d times", sc->name, r_req_ran);
      CHECK(r_seen_tag == 0x999, "%s: AM_GetMsgTag gave 0x%" PRIx64 ", expected 0x999", sc->name,
            (uint64_t)r_seen_tag);
      CHECK(nrec == 0, "%s: handler 0 ran at the receiver", sc->name);
    }
  }
  pair_barrier_eb(&P, eb);
  AM_SAFE(AM_FreeBundle(eb));
  pair_barrier_eb(&P, NULL);
}

/* ------------------------------------------------------------------------------------ */
/* EUNREACHABLE                                                                          */

static int u_rep_ran;
static void u_req(void *token, int32_t a) {
  AM_SAFE(AM_Reply1(token, 31, a));
}
static void u_rep(void *token, int32_t a) {
  (void)token;
  CHECK(a == 5, "reply arg %d", (int)a);
  u_rep_ran++;
}
static void u_lreq(void *token, void *buf, size_t n) {
  (void)token;
  (void)buf;
  (void)n;
}
static void unreach_setup(pair_t *p, void *arg) {
  (void)arg;
  static uint8_t seg[256];
  AM_SAFE(AM_SetHandler(p->ep, 0, returned_handler));
  AM_SAFE(AM_SetHandler(p->ep, 30, u_req));
  AM_SAFE(AM_SetHandler(p->ep, 31, u_rep));
  AM_SAFE(AM_SetHandler(p->ep, 32, u_lreq));
  AM_SAFE(AM_SetSeg(p->ep, seg, sizeof seg));
}

static void run_unreachable(void) {
  static const scenario_t sc = {"EUNREACHABLE after the peer was killed", K_REQUEST, 0, 0, EUNREACHABLE};
  cur = &sc;
  snprintf(g_label, sizeof g_label, "t_returned/unreachable");
  alarm(CT_WATCHDOG_SECS);
  setenv("RAMP_RETRY_LIMIT", "4", 1);
  setenv("RAMP_RTO_MAX_US", "20000", 1);
  PHASE("unreachable: setup");
  spawn_pair(&P, AM_SEQ, 1, unreach_setup, NULL);
  if (P.rank == 1) {
    pair_barrier(&P); /* serves the connectivity check */
    PHASE("unreachable: child waiting to be killed");
    for (;;) pause();
  }
  PHASE("unreachable: connectivity check");
  AM_SAFE(AM_Request1(P.ep, 1, 30, 5));
  POLL_UNTIL(P.eb, u_rep_ran == 1, 10.0, "connectivity check: no reply");
  pair_barrier(&P);
  PHASE("unreachable: killing the peer");
  kill(P.child, SIGKILL);
  int st = pair_wait_child(&P);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child did not die from SIGKILL (status 0x%x)", st);
  nrec = 0;

  PHASE("unreachable: request to the dead peer");
  double t0 = now_sec();
  EXPECT_RC(AM_Request1(P.ep, 1, 30, 5), AM_OK);
  POLL_UNTIL(P.eb, nrec >= 1, 20.0, "a request to a dead peer never came back to handler 0");
  double el = now_sec() - t0;
  check_rec(&recs[0], EUNREACHABLE, AM_REQUEST_M, 30, 0, 1, P.name[1], P.tag[1], 1, P.ep);
  ct_note("EUNREACHABLE after %.2f s", el);

  PHASE("unreachable: credit released (async xfer)");
  uint8_t b[8] = {0};
  int rc = AM_RequestXferAsync0(P.ep, 1, 0, 32, b, sizeof b);
  CHECK(rc == AM_OK, "AM_RequestXferAsync0 after the return gave %d (%s): the returned request's credit was not "
        "released (depth 1)", rc, ct_errname(rc));
  POLL_UNTIL(P.eb, nrec >= 2, 20.0, "second request to a dead peer never came back");
  check_rec(&recs[1], EUNREACHABLE, AM_REQUEST_XFER_M, 32, 2, 1, P.name[1], P.tag[1], 1, P.ep);

  PHASE("unreachable: credit released (blocking short request)");
  EXPECT_RC(AM_Request1(P.ep, 1, 30, 5), AM_OK);
  POLL_UNTIL(P.eb, nrec >= 3, 20.0, "third request to a dead peer never came back");
  check_rec(&recs[2], EUNREACHABLE, AM_REQUEST_M, 30, 0, 1, P.name[1], P.tag[1], 1, P.ep);
  poll_for_ms(P.eb, 100);
  CHECK(nrec == 3, "handler 0 ran %d times, expected 3", nrec);
  PHASE("unreachable: AM_Terminate with a request outstanding");
  EXPECT_RC(AM_Request1(P.ep, 1, 30, 5), AM_OK);
  /* AM_Terminate does not wait for the outstanding request: it does not drive it to its
   * end (no EUNREACHABLE reaches handler 0 inside it). A hang is caught by the alarm. */
  int before = nrec;
  double tt = now_sec();
  AM_SAFE(AM_Terminate());
  CHECK(nrec == before, "AM_Terminate waited for the outstanding request: handler 0 ran inside it (%d -> %d)",
        before, nrec);
  ct_note("AM_Terminate with an outstanding request: %.3f s", now_sec() - tt);
}

/* ------------------------------------------------------------------------------------ */
/* default handler 0                                                                     */

static void default_handler0_child(void) {
  alarm(CT_WATCHDOG_SECS);
  eb_t eb;
  ep_t a, b;
  en_t na, nb;
  AM_SAFE(AM_Init());
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb));
  AM_SAFE(AM_AllocateEndpoint(eb, &a, &na));
  AM_SAFE(AM_AllocateEndpoint(eb, &b, &nb));
  AM_SAFE(AM_SetTag(a, 11));
  AM_SAFE(AM_SetTag(b, 22));
  AM_SAFE(AM_Map(a, 0, nb, 22));
  AM_SAFE(AM_Map(b, 0, na, 11));
  AM_SAFE(AM_SetExpectedResources(a, 1, 4));
  AM_SAFE(AM_SetExpectedResources(b, 1, 4));
  AM_SAFE(AM_Request1(a, 0, H_UNREGISTERED_REQ, 5)); /* a keeps the default handler 0 */
  /* until the default handler 0 aborts the process (a hang: the alarm) */
  for (;;) AM_SAFE(AM_Poll(eb));
}

static void check_default_handler0(void) {
  PHASE("default handler 0");
  int pfd[2];
  CHECK(pipe(pfd) == 0, "pipe");
  fflush(stdout);
  fflush(stderr);
  pid_t c = fork();
  CHECK(c >= 0, "fork");
  if (c == 0) {
    close(pfd[0]);
    dup2(pfd[1], 2);
    default_handler0_child();
  }
  close(pfd[1]);
  char out[4096];
  size_t got = 0;
  ssize_t r;
  while (got < sizeof out - 1 && ((r = read(pfd[0], out + got, sizeof out - 1 - got)) > 0 || (r < 0 && errno == EINTR)))
    if (r > 0) got += (size_t)r;
  out[got] = 0;
  close(pfd[0]);
  int st = 0;
  while (waitpid(c, &st, 0) < 0 && errno == EINTR) {
  }
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT,
        "default handler 0: the process was not aborted (status 0x%x); its stderr: %s", st, out);
  CHECK(got > 0, "default handler 0 aborted without printing anything");
  ct_note("default handler 0 printed: %.300s", out);
}

int main(void) {
  ct_init("t_returned", CT_WATCHDOG_SECS);
  check_default_handler0();
  memset(rep_payload, 0x77, sizeof rep_payload);

  /* EUNREACHABLE first, in its own process (its RAMP_* settings must not leak here) */
  fflush(stdout);
  pid_t u = fork();
  CHECK(u >= 0, "fork");
  if (u == 0) {
    run_unreachable();
    fflush(stdout);
    _exit(0);
  }
  int ust = 0;
  while (waitpid(u, &ust, 0) < 0 && errno == EINTR) {
  }
  int unreach_ok = WIFEXITED(ust) && WEXITSTATUS(ust) == 0;

  pair_fork(&P);
  AM_SAFE(AM_Init());
  for (int i = 0; i < NSCEN; i++) run_scenario(&scenarios[i]);
  PHASE("end");
  AM_SAFE(AM_Terminate());
  if (P.rank == 1) {
    fflush(stdout);
    _exit(0);
  }
  int st = pair_wait_child(&P);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed (status 0x%x)", st);
  CHECK(unreach_ok, "the EUNREACHABLE part failed (status 0x%x, see above)", ust);
  printf("t_returned: OK (%d scenarios + EUNREACHABLE)\n", NSCEN);
  return 0;
}
