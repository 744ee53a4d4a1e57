/* t_badargs: every API function with bad arguments returns the documented code, never
 * crashes, and changes nothing (contract: "Bad args -> AM_ERR_BAD_ARG, never a crash";
 * am.h: "Out-parameters are written only on success"; spec §2.3-§2.12 for the
 * AM_ERR_RESOURCE / AM_ERR_NOT_INIT cases).
 *
 * Checks that could crash a library that trusts its handles or tokens (freed handles,
 * garbage handles, stale and garbage tokens) run in a forked subprocess, so that a
 * crash is reported as exactly that.
 */
#include "common.h"

#include <sys/wait.h>

#define H_LOOP 5
#define H_TWICE 6
#define H_REP 7
#define H_REPLYARGS 8
#define H_SAVE 9
#define H_INTERROGATE 10
#define H_FROMREP 11

static eb_t eb;
static ep_t A, B;
static en_t nameA, nameB;
static const tag_t TA = 0x1111222233334444ULL, TB = 0x5555666677778888ULL;

static int loop_ran, rep_ran, twice_ran, replyargs_ran, interrogate_ran, fromrep_ran;
static int twice_rc1 = -1, twice_rc2 = -1;
static int fromrep_rc = -1;
static int replyargs_rc[8];
static void *saved_token;

static void h_loop(void *token, int32_t a) {
  (void)token;
  (void)a;
  loop_ran++;
}

static void h_twice(void *token) {
  twice_ran++;
  twice_rc1 = AM_Reply0(token, H_REP);
  twice_rc2 = AM_Reply0(token, H_REP);
}

static void h_rep(void *token) {
  (void)token;
  rep_ran++;
}

/* reply handler that tries to reply (the token belongs to a reply) */
static void h_fromrep(void *token) {
  fromrep_ran++;
  fromrep_rc = AM_Reply0(token, H_REP);
}
static void h_req_for_fromrep(void *token) {
  AM_SAFE(AM_Reply0(token, H_FROMREP));
}

static uint8_t big[1048576 + 64];

static void h_replyargs(void *token) {
  int32_t args[17] = {0};
  int i = 0;
  replyargs_rc[i++] = ramp_ReplyArgv(token, H_REP, 0, NULL, 0, 0, 17, args);
  replyargs_rc[i++] = ramp_ReplyArgv(token, H_REP, 0, NULL, 0, 0, -1, args);
  replyargs_rc[i++] = ramp_Reply(token, H_REP, 17);
  replyargs_rc[i++] = ramp_ReplyArgv(token, H_REP, 3, NULL, 0, 0, 0, args);       /* bad category */
  replyargs_rc[i++] = AM_ReplyI0(token, H_REP, big, (size_t)AM_MaxMedium() + 1);   /* medium too big */
  replyargs_rc[i++] = AM_ReplyI0(token, H_REP, NULL, 10);                         /* NULL source */
  replyargs_rc[i++] = AM_ReplyXfer0(token, 0, H_REP, big, (size_t)AM_MaxLong() + 1); /* long too big */
  replyargs_rc[i++] = AM_Reply0(token, H_REP); /* the failed attempts did not use up the reply */
  replyargs_ran++;
}

static void h_save(void *token) {
  saved_token = token;
}

static int interrogate_rc[8];
static void h_interrogate(void *token) {
  int i = 0;
  interrogate_rc[i++] = AM_GetSourceEndpoint(token, NULL);
  interrogate_rc[i++] = AM_GetDestEndpoint(token, NULL);
  interrogate_rc[i++] = AM_GetMsgTag(token, NULL);
  interrogate_rc[i++] = ramp_GetSourceId(token, NULL);
  interrogate_rc[i++] = ramp_GetTokenInfo(token, NULL, NULL, NULL);
  interrogate_ran++;
}

static void returned_handler(int status, op_t opcode, void *token) {
  (void)token;
  FAIL("unexpected returned message: %s %s", ct_statusname(status), ct_opname((int)opcode));
}

static void isolated(const char *what, void (*fn)(void)) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  CHECK(pid >= 0, "fork");
  if (pid == 0) {
    ct_label_suffix("/isolated");
    PHASE(what);
    fn();
    fflush(stdout);
    _exit(0);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(st)) FAIL("%s: the library CRASHED (signal %d, %s)", what, WTERMSIG(st), strsignal(WTERMSIG(st)));
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: failed (exit status %d, see above)", what,
        WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* ------------------------------------------------------------------------------------ */

static void freed_handles(void) {
  eb_t eb2;
  ep_t ep2;
  en_t n2;
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb2));
  AM_SAFE(AM_AllocateEndpoint(eb2, &ep2, &n2));
  AM_SAFE(AM_FreeEndpoint(ep2));
  tag_t t;
  EXPECT_RC(AM_SetTag(ep2, 5), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetTag(ep2, &t), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_FreeEndpoint(ep2), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_Map(ep2, 0, n2, 5), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_SetExpectedResources(ep2, 1, 1), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_Request0(ep2, 0, H_LOOP), AM_ERR_BAD_ARG);
  /* the reason of the thread's last failure, for a program that only has the code */
  CHECK(strstr(ramp_LastError(), "AM_Request") && strstr(ramp_LastError(), "not a live endpoint"),
        "ramp_LastError() after a request on a freed endpoint: \"%s\"", ramp_LastError());
  AM_SAFE(AM_Poll(eb2)); /* the bundle is still fine */
  AM_SAFE(AM_FreeBundle(eb2));
  EXPECT_RC(AM_FreeBundle(eb2), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_Poll(eb2), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_AllocateEndpoint(eb2, &ep2, &n2), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_SetEventMask(eb2, AM_NOTEMPTY), AM_ERR_BAD_ARG);
  /* an endpoint freed together with its bundle */
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb2));
  AM_SAFE(AM_AllocateEndpoint(eb2, &ep2, &n2));
  AM_SAFE(AM_FreeBundle(eb2));
  EXPECT_RC(AM_SetTag(ep2, 5), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_FreeEndpoint(ep2), AM_ERR_BAD_ARG);
}

static void garbage_handles(void) {
  eb_t geb = (eb_t)(uintptr_t)0x1234;
  ep_t gep = (ep_t)(uintptr_t)0x5678;
  tag_t t;
  en_t n;
  EXPECT_RC(AM_FreeBundle(geb), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_Poll(geb), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_AllocateEndpoint(geb, &gep, &n), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetTag(gep, &t), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_FreeEndpoint(gep), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_Request0(gep, 0, H_LOOP), AM_ERR_BAD_ARG);
}

static void garbage_token(void) {
  int rc = AM_Reply0((void *)(uintptr_t)0x1234, H_REP);
  CHECK(rc == AM_ERR_BAD_ARG || rc == AM_ERR_RESOURCE,
        "AM_Reply0 with a garbage token returned %d (%s), expected AM_ERR_BAD_ARG or AM_ERR_RESOURCE", rc,
        ct_errname(rc));
  en_t n;
  rc = AM_GetSourceEndpoint((void *)(uintptr_t)0x1234, &n);
  CHECK(rc == AM_ERR_BAD_ARG || rc == AM_ERR_RESOURCE, "AM_GetSourceEndpoint with a garbage token returned %s",
        ct_errname(rc));
  ct_note("garbage token: AM_Reply0 -> %s", ct_errname(AM_Reply0((void *)(uintptr_t)0x1234, H_REP)));
}

static void stale_token(void) {
  CHECK(saved_token != NULL, "no saved token");
  int rc = AM_Reply0(saved_token, H_REP);
  CHECK(rc == AM_ERR_BAD_ARG || rc == AM_ERR_RESOURCE,
        "AM_Reply0 with the token of a handler that has returned gave %d (%s), expected AM_ERR_RESOURCE (spec) "
        "or AM_ERR_BAD_ARG", rc, ct_errname(rc));
  ct_note("stale token: AM_Reply0 -> %s", ct_errname(rc));
  en_t n;
  rc = AM_GetSourceEndpoint(saved_token, &n);
  CHECK(rc != AM_OK, "AM_GetSourceEndpoint with a stale token returned AM_OK");
}

/* ------------------------------------------------------------------------------------ */

/* A bad RAMP_* variable: AM_Init refuses (in a child: the configuration is read once per
 * process), names the variable on stderr, and the process can go on without crashing. */
static void bad_configuration(void) {
  int errpipe[2];
  CHECK(pipe(errpipe) == 0, "pipe");
  pid_t pid = fork();
  CHECK(pid >= 0, "fork");
  if (pid == 0) {
    dup2(errpipe[1], 2);
    setenv("RAMP_FAULT_LOSS", "lots", 1);
    int rc = AM_Init();
    eb_t eb = NULL;
    int rc2 = AM_AllocateBundle(AM_SEQ, &eb);
    _exit(rc == AM_ERR_BAD_ARG && rc2 == AM_ERR_NOT_INIT && eb == NULL ? 0 : 1);
  }
  close(errpipe[1]);
  char buf[4096];
  size_t n = 0;
  ssize_t r;
  while (n < sizeof buf - 1 && (r = read(errpipe[0], buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)r;
  buf[n] = 0;
  close(errpipe[0]);
  int st = 0;
  CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
        "with RAMP_FAULT_LOSS=lots, AM_Init must return AM_ERR_BAD_ARG and nothing be allocated (status %d)", st);
  CHECK(strstr(buf, "RAMP_FAULT_LOSS") != NULL, "the message does not name the variable: %s", buf);
}

int main(void) {
  ct_init("t_badargs", CT_WATCHDOG_SECS);
  PHASE("bad configuration");
  bad_configuration();
  AM_SAFE(AM_Init());
  const eb_t NULLEB = NULL;
  const ep_t NULLEP = NULL;

  PHASE("bundles");
  eb_t tmp = NULL;
  EXPECT_RC(AM_AllocateBundle(AM_SEQ, NULL), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_AllocateBundle(7, &tmp), AM_ERR_BAD_ARG);
  CHECK(tmp == NULL, "AM_AllocateBundle(7) wrote its out-parameter");
  EXPECT_RC(AM_AllocateBundle(-1, &tmp), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_AllocateBundle(2, &tmp), AM_ERR_BAD_ARG);
  AM_SAFE(AM_AllocateBundle(AM_PAR, &tmp)); /* ramp supports AM_PAR */
  CHECK(tmp != NULL, "AM_PAR bundle handle is NULL");
  AM_SAFE(AM_FreeBundle(tmp));
  EXPECT_RC(AM_FreeBundle(NULLEB), AM_ERR_BAD_ARG);
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb));

  PHASE("endpoints");
  ep_t etmp = NULL;
  en_t ntmp;
  EXPECT_RC(AM_AllocateEndpoint(NULLEB, &etmp, &ntmp), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_AllocateEndpoint(eb, NULL, &ntmp), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_AllocateEndpoint(eb, &etmp, NULL), AM_ERR_BAD_ARG);
  CHECK(etmp == NULL, "failed AM_AllocateEndpoint wrote its out-parameter");
  EXPECT_RC(AM_FreeEndpoint(NULLEP), AM_ERR_BAD_ARG);
  AM_SAFE(AM_AllocateEndpoint(eb, &A, &nameA));
  AM_SAFE(AM_AllocateEndpoint(eb, &B, &nameB));
  CHECK(!ramp_enEqual(nameA, nameB), "two endpoints have equal names %s", en_str(nameA));
  CHECK(ramp_enEqual(nameA, nameA), "ramp_enEqual(a, a) is 0");

  PHASE("move endpoint");
  eb_t eb2;
  AM_SAFE(AM_AllocateBundle(AM_SEQ, &eb2));
  EXPECT_RC(AM_MoveEndpoint(NULLEP, eb, eb2), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_MoveEndpoint(A, NULLEB, eb2), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_MoveEndpoint(A, eb, NULLEB), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_MoveEndpoint(A, eb2, eb), AM_ERR_RESOURCE); /* A is not in eb2 */
  AM_SAFE(AM_FreeBundle(eb2));

  PHASE("segments");
  void *sa = (void *)1;
  uintptr_t sn = 77;
  EXPECT_RC(AM_GetSeg(NULLEP, &sa, &sn), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetSeg(A, NULL, &sn), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetSeg(A, &sa, NULL), AM_ERR_BAD_ARG);
  CHECK(sa == (void *)1 && sn == 77, "failed AM_GetSeg wrote its out-parameters");
  static uint8_t segA[4096], segB[4096];
  EXPECT_RC(AM_SetSeg(NULLEP, segA, sizeof segA), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_SetSeg(A, (void *)(UINTPTR_MAX - 7), 16), AM_ERR_BAD_ARG); /* wraps */
  AM_SAFE(AM_GetSeg(A, &sa, &sn));
  CHECK(sa == NULL && sn == 0, "new endpoint's segment is (%p, %lu), expected (NULL, 0)", sa, (unsigned long)sn);
  AM_SAFE(AM_SetSeg(A, segA, sizeof segA));
  AM_SAFE(AM_SetSeg(B, segB, sizeof segB));
  EXPECT_RC(AM_MaxSegLength(NULL), AM_ERR_BAD_ARG);

  PHASE("tags");
  tag_t t = 42;
  EXPECT_RC(AM_GetTag(NULLEP, &t), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetTag(A, NULL), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_SetTag(NULLEP, TA), AM_ERR_BAD_ARG);
  AM_SAFE(AM_SetTag(A, TA));
  AM_SAFE(AM_SetTag(B, TB));
  AM_SAFE(AM_GetTag(A, &t));
  CHECK(t == TA, "tag 0x%" PRIx64, (uint64_t)t);

  PHASE("translation table");
  int idx = -7, n = -7;
  EXPECT_RC(AM_Map(NULLEP, 0, nameA, TA), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_Map(A, -1, nameA, TA), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_Map(A, 256, nameA, TA), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_Map(A, 1 << 20, nameA, TA), AM_ERR_BAD_ARG);
  AM_SAFE(AM_Map(A, 0, nameA, TA));
  AM_SAFE(AM_Map(A, 1, nameB, TB));
  EXPECT_RC(AM_Map(A, 1, nameA, 0x99), AM_ERR_RESOURCE); /* already mapped */
  en_t gn;
  AM_SAFE(AM_GetTranslationTag(A, 1, &t));
  AM_SAFE(AM_GetTranslationName(A, 1, &gn));
  CHECK(t == TB && ramp_enEqual(gn, nameB), "a refused AM_Map changed entry 1 (tag 0x%" PRIx64 ", name %s)",
        (uint64_t)t, en_str(gn));
  EXPECT_RC(AM_MapAny(NULLEP, &idx, nameA, TA), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_MapAny(A, NULL, nameA, TA), AM_ERR_BAD_ARG);
  CHECK(idx == -7, "failed AM_MapAny wrote *index");
  EXPECT_RC(AM_UnMap(NULLEP, 0), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_UnMap(A, -1), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_UnMap(A, 256), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_UnMap(A, 5), AM_ERR_RESOURCE); /* not mapped */
  EXPECT_RC(AM_GetNumTranslations(NULLEP, &n), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetNumTranslations(A, NULL), AM_ERR_BAD_ARG);
  CHECK(n == -7, "failed AM_GetNumTranslations wrote its out-parameter");
  EXPECT_RC(AM_SetNumTranslations(NULLEP, 512), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_SetNumTranslations(A, (1 << 20) + 1), AM_ERR_RESOURCE);
  EXPECT_RC(AM_SetNumTranslations(A, -5), AM_ERR_RESOURCE);
  EXPECT_RC(AM_SetNumTranslations(A, INT32_MAX), AM_ERR_RESOURCE);
  AM_SAFE(AM_GetNumTranslations(A, &n));
  CHECK(n == 256, "table size %d after refused resizes, expected 256", n);
  EXPECT_RC(AM_GetTranslationInuse(NULLEP, 0), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetTranslationInuse(A, -1), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetTranslationInuse(A, 256), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetTranslationInuse(A, 2), AM_ERR_RESOURCE);
  EXPECT_RC(AM_GetTranslationInuse(A, 1), AM_OK);
  t = 0xABC;
  EXPECT_RC(AM_GetTranslationTag(NULLEP, 0, &t), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetTranslationTag(A, 0, NULL), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetTranslationTag(A, -1, &t), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetTranslationTag(A, 256, &t), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetTranslationTag(A, 2, &t), AM_ERR_RESOURCE);
  CHECK(t == 0xABC, "failed AM_GetTranslationTag wrote its out-parameter");
  EXPECT_RC(AM_GetTranslationName(NULLEP, 0, &gn), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetTranslationName(A, 0, NULL), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetTranslationName(A, 256, &gn), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetTranslationName(A, 2, &gn), AM_ERR_RESOURCE);
  EXPECT_RC(ramp_SetTranslationTag(NULLEP, 0, 5), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_SetTranslationTag(A, -1, 5), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_SetTranslationTag(A, 256, 5), AM_ERR_BAD_ARG);
  CHECK(ramp_SetTranslationTag(A, 2, 5) != AM_OK, "ramp_SetTranslationTag on an unmapped entry returned AM_OK");
  EXPECT_RC(AM_GetTranslationInuse(A, 2), AM_ERR_RESOURCE);
  AM_SAFE(AM_Map(B, 0, nameA, TA));
  AM_SAFE(AM_Map(B, 1, nameB, TB));

  PHASE("handlers");
  handler_t h = 0;
  EXPECT_RC(AM_SetHandler(NULLEP, H_LOOP, h_loop), AM_ERR_BAD_ARG);
  EXPECT_RC(_AM_SetHandler(A, H_LOOP, NULL), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_SetHandlerAny(NULLEP, &h, h_loop), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_SetHandlerAny(A, NULL, h_loop), AM_ERR_BAD_ARG);
  EXPECT_RC(_AM_SetHandlerAny(A, &h, NULL), AM_ERR_BAD_ARG);
  CHECK(h == 0, "failed AM_SetHandlerAny wrote *handler");
  ep_t eps[2] = {A, B};
  for (int i = 0; i < 2; i++) {
    ep_t e = eps[i];
    AM_SAFE(AM_SetHandler(e, 0, returned_handler));
    AM_SAFE(AM_SetHandler(e, H_LOOP, h_loop));
    AM_SAFE(AM_SetHandler(e, H_TWICE, h_twice));
    AM_SAFE(AM_SetHandler(e, H_REP, h_rep));
    AM_SAFE(AM_SetHandler(e, H_REPLYARGS, h_replyargs));
    AM_SAFE(AM_SetHandler(e, H_SAVE, h_save));
    AM_SAFE(AM_SetHandler(e, H_INTERROGATE, h_interrogate));
    AM_SAFE(AM_SetHandler(e, H_FROMREP, h_fromrep));
    AM_SAFE(AM_SetHandler(e, 12, h_req_for_fromrep));
  }
  EXPECT_RC(_AM_SetHandler(A, H_LOOP, NULL), AM_ERR_BAD_ARG); /* must not clear the installed one */
  /* the failed SetHandlerAny calls must not have taken a slot: 1 is the lowest free */
  AM_SAFE(AM_SetHandlerAny(A, &h, h_loop));
  CHECK(h == 1, "AM_SetHandlerAny gave %d, expected 1 (lowest free slot)", (int)h);
  int nh = 0;
  EXPECT_RC(AM_GetNumHandlers(NULLEP, &nh), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_SetNumHandlers(NULLEP, 256), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_SetNumHandlers(A, 255), AM_ERR_RESOURCE);
  EXPECT_RC(AM_SetNumHandlers(A, 256), AM_OK);

  PHASE("event mask");
  int mask = -1;
  EXPECT_RC(AM_GetEventMask(NULLEB, &mask), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetEventMask(eb, NULL), AM_ERR_BAD_ARG);
  AM_SAFE(AM_GetEventMask(eb, &mask));
  CHECK(mask == AM_NOEVENTS, "new bundle's mask %d, expected AM_NOEVENTS", mask);
  EXPECT_RC(AM_SetEventMask(eb, 7), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_SetEventMask(eb, -1), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_SetEventMask(NULLEB, AM_NOTEMPTY), AM_ERR_BAD_ARG);
  AM_SAFE(AM_GetEventMask(eb, &mask));
  CHECK(mask == AM_NOEVENTS, "mask changed to %d by a refused AM_SetEventMask", mask);
  AM_SAFE(AM_SetEventMask(eb, AM_NOTEMPTY));
  EXPECT_RC(AM_SetEventMask(eb, 7), AM_ERR_BAD_ARG);
  AM_SAFE(AM_GetEventMask(eb, &mask));
  CHECK(mask == AM_NOTEMPTY, "mask changed to %d by AM_SetEventMask(eb, 7)", mask);
  AM_SAFE(AM_SetEventMask(eb, AM_NOEVENTS));
  EXPECT_RC(AM_WaitSema(NULLEB), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_Poll(NULLEB), AM_ERR_BAD_ARG);

  PHASE("requests before AM_SetExpectedResources");
  AM_SAFE(AM_Poll(eb)); /* endpoints without SetExpectedResources are skipped */
  uint8_t small[64] = {0};
  EXPECT_RC(AM_Request1(A, 0, H_LOOP, 1), AM_ERR_NOT_INIT);
  EXPECT_RC(AM_Request1(A, 1, H_LOOP, 1), AM_ERR_NOT_INIT);
  EXPECT_RC(AM_RequestI0(A, 1, H_LOOP, small, 8), AM_ERR_NOT_INIT);
  EXPECT_RC(AM_RequestXfer0(A, 1, 0, H_LOOP, small, 8), AM_ERR_NOT_INIT);
  EXPECT_RC(AM_RequestXferAsync0(A, 1, 0, H_LOOP, small, 8), AM_ERR_NOT_INIT);
  CHECK(loop_ran == 0, "a handler ran for a refused request");

  PHASE("AM_SetExpectedResources");
  EXPECT_RC(AM_SetExpectedResources(NULLEP, 2, 4), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_SetExpectedResources(A, 2, 0), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_SetExpectedResources(A, 2, 1025), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_SetExpectedResources(A, 2, -1), AM_ERR_BAD_ARG);
  /* nothing changed: the table is still open and requests still NOT_INIT */
  AM_SAFE(AM_Map(A, 3, nameB, TB));
  AM_SAFE(AM_UnMap(A, 3));
  EXPECT_RC(AM_Request1(A, 0, H_LOOP, 1), AM_ERR_NOT_INIT);
  AM_SAFE(AM_SetExpectedResources(A, 2, 4));
  AM_SAFE(AM_SetExpectedResources(B, 2, 4));
  EXPECT_RC(AM_SetExpectedResources(A, 2, 4), AM_ERR_RESOURCE);
  EXPECT_RC(AM_SetExpectedResources(A, 2, 8), AM_ERR_RESOURCE);
  EXPECT_RC(AM_Map(A, 5, nameB, TB), AM_ERR_RESOURCE);
  idx = -7;
  EXPECT_RC(AM_MapAny(A, &idx, nameB, TB), AM_ERR_RESOURCE);
  CHECK(idx == -7, "failed AM_MapAny wrote *index");
  EXPECT_RC(AM_UnMap(A, 1), AM_ERR_RESOURCE);
  EXPECT_RC(AM_GetTranslationInuse(A, 1), AM_OK);
  EXPECT_RC(AM_GetTranslationInuse(A, 5), AM_ERR_RESOURCE);

  PHASE("request arguments");
  int32_t args[17] = {0};
  EXPECT_RC(ramp_RequestArgv(A, 0, H_LOOP, 0, NULL, 0, 0, 0, 17, args), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_RequestArgv(A, 0, H_LOOP, 0, NULL, 0, 0, 0, -1, args), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_RequestArgv(A, 0, H_LOOP, 0, NULL, 0, 0, 0, 2, NULL), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_RequestArgv(A, 0, H_LOOP, 3, NULL, 0, 0, 0, 1, args), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_RequestArgv(A, 0, H_LOOP, -1, NULL, 0, 0, 0, 1, args), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_RequestArgv(NULLEP, 0, H_LOOP, 0, NULL, 0, 0, 0, 1, args), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_Request(A, 0, H_LOOP, 17), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_Request(A, 0, H_LOOP, -3), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_RequestI(A, 1, H_LOOP, small, 8, 17), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_RequestXfer(A, 1, H_LOOP, small, 8, 0, 0, 17), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_Request1(NULLEP, 0, H_LOOP, 1), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_Request1(A, 2, H_LOOP, 1), AM_ERR_BAD_ARG);          /* unmapped index */
  EXPECT_RC(AM_Request1(A, 256, H_LOOP, 1), AM_ERR_BAD_ARG);        /* out of range */
  EXPECT_RC(AM_Request1(A, UINT32_MAX, H_LOOP, 1), AM_ERR_BAD_ARG); /* out of range */
  EXPECT_RC(AM_RequestI0(A, 1, H_LOOP, big, (size_t)AM_MaxMedium() + 1), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_RequestI0(A, 0, H_LOOP, big, (size_t)AM_MaxMedium() + 1), AM_ERR_BAD_ARG); /* loopback too */
  EXPECT_RC(AM_RequestI0(A, 1, H_LOOP, NULL, 8), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_RequestI0(A, 1, H_LOOP, (void *)(UINTPTR_MAX - 3), 8), AM_ERR_BAD_ARG); /* wraps */
  EXPECT_RC(AM_RequestI0(A, 0, H_LOOP, (void *)(UINTPTR_MAX - 3), 8), AM_ERR_BAD_ARG); /* loopback */
  EXPECT_RC(AM_RequestXfer0(A, 1, 0, H_LOOP, big, (size_t)AM_MaxLong() + 1), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_RequestXfer0(A, 0, 0, H_LOOP, big, (size_t)AM_MaxLong() + 1), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_RequestXferAsync0(A, 1, 0, H_LOOP, big, (size_t)AM_MaxLong() + 1), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_RequestXfer0(A, 1, 0, H_LOOP, NULL, 8), AM_ERR_BAD_ARG);
  poll_for_ms(eb, 100);
  CHECK(loop_ran == 0, "a handler ran for a refused request (%d)", loop_ran);

  PHASE("valid requests still work");
  AM_SAFE(AM_Request1(A, 0, H_LOOP, 1)); /* loopback: synchronous */
  CHECK(loop_ran == 1, "loopback handler ran %d times", loop_ran);
  AM_SAFE(AM_Request1(A, 1, H_LOOP, 1)); /* to B, auto-reply */
  POLL_UNTIL(eb, loop_ran == 2, 5.0, "request A->B did not run its handler");

  PHASE("a second reply from the same handler");
  AM_SAFE(AM_Request0(A, 1, H_TWICE));
  POLL_UNTIL(eb, twice_ran == 1 && rep_ran == 1, 5.0, "A->B H_TWICE: handler %d reply %d", twice_ran, rep_ran);
  EXPECT_RC(twice_rc1, AM_OK);
  EXPECT_RC(twice_rc2, AM_ERR_RESOURCE);
  poll_for_ms(eb, 100);
  CHECK(rep_ran == 1, "reply handler ran %d times, expected 1", rep_ran);
  twice_rc1 = twice_rc2 = -1;
  AM_SAFE(AM_Request0(A, 0, H_TWICE)); /* loopback */
  CHECK(twice_ran == 2 && rep_ran == 2, "loopback H_TWICE: handler %d reply %d", twice_ran, rep_ran);
  EXPECT_RC(twice_rc1, AM_OK);
  EXPECT_RC(twice_rc2, AM_ERR_RESOURCE);

  PHASE("reply from a reply handler");
  AM_SAFE(AM_Request0(A, 1, 12));
  POLL_UNTIL(eb, fromrep_ran == 1, 5.0, "reply handler did not run");
  EXPECT_RC(fromrep_rc, AM_ERR_RESOURCE);
  fromrep_rc = -1;
  AM_SAFE(AM_Request0(A, 0, 12)); /* loopback */
  CHECK(fromrep_ran == 2, "loopback reply handler did not run");
  EXPECT_RC(fromrep_rc, AM_ERR_RESOURCE);
  poll_for_ms(eb, 50);
  CHECK(rep_ran == 2, "a reply from a reply handler was delivered");

  PHASE("reply arguments");
  AM_SAFE(AM_Request0(A, 1, H_REPLYARGS));
  POLL_UNTIL(eb, replyargs_ran == 1 && rep_ran == 3, 5.0, "H_REPLYARGS %d rep %d", replyargs_ran, rep_ran);
  const char *what[8] = {"ramp_ReplyArgv numargs 17", "ramp_ReplyArgv numargs -1", "ramp_Reply numargs 17",
                         "ramp_ReplyArgv category 3", "AM_ReplyI0 > AM_MaxMedium()", "AM_ReplyI0 NULL source",
                         "AM_ReplyXfer0 > AM_MaxLong()", "AM_Reply0 after the failed attempts"};
  for (int i = 0; i < 8; i++) {
    int want = i == 7 ? AM_OK : AM_ERR_BAD_ARG;
    CHECK(replyargs_rc[i] == want, "%s returned %s, expected %s", what[i], ct_errname(replyargs_rc[i]),
          ct_errname(want));
  }
  EXPECT_RC(ramp_ReplyArgv(NULL, H_REP, 0, NULL, 0, 0, 0, args), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_Reply0(NULL, H_REP), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_ReplyI0(NULL, H_REP, small, 4), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_ReplyXfer0(NULL, 0, H_REP, small, 4), AM_ERR_BAD_ARG);

  PHASE("token interrogation with NULL");
  en_t en;
  ep_t dep;
  int sid;
  handler_t th;
  ramp_category_t tc;
  int treq;
  EXPECT_RC(AM_GetSourceEndpoint(NULL, &en), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetDestEndpoint(NULL, &dep), AM_ERR_BAD_ARG);
  EXPECT_RC(AM_GetMsgTag(NULL, &t), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_GetSourceId(NULL, &sid), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_GetTokenInfo(NULL, &th, &tc, &treq), AM_ERR_BAD_ARG);
  AM_SAFE(AM_Request0(A, 1, H_INTERROGATE));
  POLL_UNTIL(eb, interrogate_ran == 1, 5.0, "H_INTERROGATE did not run");
  const char *iw[5] = {"AM_GetSourceEndpoint(token, NULL)", "AM_GetDestEndpoint(token, NULL)",
                       "AM_GetMsgTag(token, NULL)", "ramp_GetSourceId(token, NULL)",
                       "ramp_GetTokenInfo(token, NULL, NULL, NULL)"};
  for (int i = 0; i < 5; i++)
    CHECK(interrogate_rc[i] == AM_ERR_BAD_ARG, "%s returned %s", iw[i], ct_errname(interrogate_rc[i]));

  PHASE("statistics and names");
  ramp_stats_t st;
  EXPECT_RC(ramp_GetEndpointStatistics(NULLEP, &st), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_GetEndpointStatistics(A, NULL), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_ResetEndpointStatistics(NULLEP), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_AggregateStatistics(NULL, &st), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_AggregateStatistics(&st, NULL), AM_ERR_BAD_ARG);
  char sbuf[64];
  EXPECT_RC(ramp_enToString(nameA, NULL, 64), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_enToString(nameA, sbuf, 4), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_enToString(nameA, sbuf, 0), AM_ERR_BAD_ARG);
  /* memory that wraps around the address space, a misaligned pointer: refused before
   * anything is read or written through them (never touched: a crash otherwise) */
  EXPECT_RC(ramp_enToString(nameA, (char *)(UINTPTR_MAX - 7), 64), AM_ERR_BAD_ARG);
  EXPECT_RC(ramp_AggregateStatistics(&st, (const ramp_stats_t *)((uintptr_t)&st + 1)), AM_ERR_BAD_ARG);
  CHECK(ramp_DumpStatistics(NULL, (const ramp_stats_t *)((uintptr_t)&st + 1), 0) == NULL,
        "ramp_DumpStatistics read a misaligned ramp_stats_t");
  AM_SAFE(ramp_enToString(nameA, sbuf, sizeof sbuf));
  CHECK(strchr(sbuf, ':') != NULL && strlen(sbuf) < sizeof sbuf, "ramp_enToString gave \"%s\"", sbuf);
  CHECK(strcmp(ct_errname(AM_OK), "AM_OK") == 0, "ramp_ErrorName(0) = %s", ct_errname(0));
  CHECK(strcmp(ct_errname(AM_ERR_BAD_ARG), "AM_ERR_BAD_ARG") == 0, "ramp_ErrorName(2) = %s", ct_errname(2));
  CHECK(strcmp(ct_errname(AM_ERR_RESOURCE), "AM_ERR_RESOURCE") == 0, "ramp_ErrorName(3) = %s", ct_errname(3));
  CHECK(ramp_ErrorName(12345) != NULL, "ramp_ErrorName(12345) is NULL");
  CHECK(strcmp(ct_statusname(EBADTAG), "EBADTAG") == 0, "ramp_StatusName(3) = %s", ct_statusname(3));
  CHECK(strcmp(ct_statusname(EUNREACHABLE), "EUNREACHABLE") == 0, "ramp_StatusName(9) = %s", ct_statusname(9));
  CHECK(ramp_StatusName(-4) != NULL, "ramp_StatusName(-4) is NULL");
  CHECK(ramp_Version() && strcmp(ramp_Version(), RAMP_VERSION_STRING) == 0, "ramp_Version() = %s",
        ramp_Version() ? ramp_Version() : "(null)");

  PHASE("saving a token");
  AM_SAFE(AM_Request0(A, 1, H_SAVE));
  POLL_UNTIL(eb, saved_token != NULL, 5.0, "H_SAVE did not run");
  poll_for_ms(eb, 50);

  isolated("stale token (handler has returned)", stale_token);
  isolated("garbage token", garbage_token);
  isolated("freed handles", freed_handles);
  isolated("garbage handles", garbage_handles);

  PHASE("teardown");
  poll_for_ms(eb, 50);
  CHECK(loop_ran == 2, "H_LOOP ran %d times, expected 2", loop_ran);
  AM_SAFE(AM_FreeEndpoint(A));
  AM_SAFE(AM_FreeBundle(eb));
  AM_SAFE(AM_Terminate());
  printf("t_badargs: OK\n");
  return 0;
}
