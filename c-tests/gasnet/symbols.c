/*
 * symbols.c -- an object built as against AMUDP 3.16's own headers, linked with -lramp.
 *
 * It includes NO ramp header: the declarations below are AMUDP's (amudp.h,
 * amudp_spmd.h of GASNet's other/amudp, as its amudp_const.h build mode _NDEBUG
 * spells the link names), with AMUDP's own amudp_stats_t.  So every call resolves to an
 * AMUDP_* / AMX_* / AM_* symbol of libramp.so, as an object file compiled against AMUDP
 * would when relinked with -lramp.  A 2-rank job (./symbols 2): the knobs (assigned
 * through their AMUDP and AMX names: one object), the spawner table, start-up, the va_list
 * request/reply forms GASNet's core uses (AMUDP_RequestVA ... AMUDP_ReplyXferVA),
 * AMUDP_GetSourceId, the handler callbacks, control traffic, statistics into AMUDP's
 * 320-byte struct (with a guard after it that must stay intact), aggregate and dump,
 * getenvMaster, the exit callback, and exit.  Prints "symbols: rank R ok".
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- AMUDP 3.16's declarations (the subset used here) ----------------------------- */
typedef uint64_t tag_t;
typedef uint8_t handler_t;
typedef uint32_t amudp_node_t;
typedef uint64_t amx_tick_t;
typedef enum { amudp_Short = 0, amudp_Medium = 1, amudp_Long = 2, amudp_NumCategories = 3 } amudp_category_t;
typedef struct {
  uint64_t RequestsSent[amudp_NumCategories];
  uint64_t RepliesSent[amudp_NumCategories];
  uint64_t RequestsRetransmitted[amudp_NumCategories];
  uint64_t RepliesRetransmitted[amudp_NumCategories];
  uint64_t RepliesSquashed[amudp_NumCategories];
  uint64_t RequestsReceived[amudp_NumCategories];
  uint64_t RepliesReceived[amudp_NumCategories];
  uint64_t ReturnedMessages;
  uint64_t OutOfOrderRequests;
  uint64_t OutOfOrderReplies;
  amx_tick_t RequestMinLatency;
  amx_tick_t RequestMaxLatency;
  amx_tick_t RequestSumLatency;
  uint64_t RequestDataBytesSent[amudp_NumCategories];
  uint64_t ReplyDataBytesSent[amudp_NumCategories];
  uint64_t RequestTotalBytesSent[amudp_NumCategories];
  uint64_t ReplyTotalBytesSent[amudp_NumCategories];
  uint64_t TotalBytesSent;
} amudp_stats_t;
typedef void (*amudp_handler_fn_t)(void);
struct amudp_eb; typedef struct amudp_eb *eb_t;
struct amudp_ep; typedef struct amudp_ep *ep_t;
typedef void (*AMUDP_preHandlerCallback_t)(amudp_category_t cat, int isReq, int handlerId, void *token,
                                           void *buf, size_t nbytes, int numargs, uint32_t *args);
typedef void (*AMUDP_postHandlerCallback_t)(amudp_category_t cat, int isReq);
typedef int (*amudp_spawnfn_t)(int nproc, int argc, char **argv, char **extra_env);
typedef void (*amudp_exitcallback_t)(int);
typedef struct { char abbrev; const char *desc; amudp_spawnfn_t fnptr; } amudp_spawnfn_desc_t;

extern int AMUDP_PoliteSync;
extern int AMX_VerboseErrors;
extern int AMX_SilentMode;
extern const char *AMX_ProcessLabel;
extern int AMUDP_VerboseErrors;
extern const amudp_stats_t AMUDP_initial_stats;
extern void (*AMUDP_SPMDkillmyprocess)(int);
extern amudp_spawnfn_desc_t const AMUDP_Spawnfn_Desc[];
extern int AMUDP_SetUDPInterface(uint32_t IPAddress);
extern int AMUDP_GetEndpointStatistics(ep_t ep, amudp_stats_t *stats);
extern int AMUDP_ResetEndpointStatistics(ep_t ep);
extern int AMUDP_AggregateStatistics(amudp_stats_t *runningsum, amudp_stats_t *newvalues);
extern const char *AMUDP_DumpStatistics(void *fp, amudp_stats_t *stats, int globalAnalysis);
extern int AMUDP_SetHandlerCallbacks(ep_t ep, AMUDP_preHandlerCallback_t pre, AMUDP_postHandlerCallback_t post);
extern int AMUDP_SPMDHandleControlTraffic(int *controlMessagesServiced);
extern int AMUDP_SetTranslationTag(ep_t ea, int index, tag_t tag);
extern int AMUDP_GetSourceId(void *token, int *srcid);
extern int AM_Poll(eb_t bundle);
extern int AM_SetSeg(ep_t ea, void *addr, uintptr_t nbytes);
extern int _AM_SetHandler(ep_t ea, handler_t handler, amudp_handler_fn_t function);
extern int AMUDP_RequestVA(ep_t ep, amudp_node_t dest, handler_t h, int numargs, va_list ap);
extern int AMUDP_RequestIVA(ep_t ep, amudp_node_t dest, handler_t h, void *src, size_t n, int numargs, va_list ap);
extern int AMUDP_RequestXferVA(ep_t ep, amudp_node_t dest, handler_t h, void *src, size_t n, uintptr_t off,
                               int async, int numargs, va_list ap);
extern int AMUDP_ReplyVA(void *token, handler_t h, int numargs, va_list ap);
extern int AMUDP_ReplyIVA(void *token, handler_t h, void *src, size_t n, int numargs, va_list ap);
extern int AMUDP_ReplyXferVA(void *token, handler_t h, void *src, size_t n, uintptr_t off, int numargs, va_list ap);
extern int AMUDP_Request(ep_t ep, amudp_node_t dest, handler_t h, int numargs, ...);
extern int AMUDP_Reply(void *token, handler_t h, int numargs, ...);
extern int AMUDP_SPMDStartup_AMUDP_NDEBUG(int *argc, char ***argv, int nproc, int networkdepth,
                                          amudp_spawnfn_t spawnfn, uint64_t *networkpid, eb_t *eb, ep_t *ep);
extern int AMUDP_SPMDExit(int exitcode);
extern int AMUDP_SPMDSetExitCallback(amudp_exitcallback_t);
extern int AMUDP_SPMDIsWorker(char **argv);
extern int AMUDP_SPMDNumProcs(void);
extern int AMUDP_SPMDMyProc(void);
extern int AMUDP_SPMDBarrier(void);
extern const char *AMUDP_SPMDgetenvMaster(const char *keyname);
extern int AMUDP_SPMDAllGather(void *source, void *dest, size_t len);
extern int AMUDP_SPMDLocalSpawn(int nproc, int argc, char **argv, char **extra_env);
extern int AMUDP_SPMDSshSpawn(int nproc, int argc, char **argv, char **extra_env);
extern int AMUDP_SPMDCustomSpawn(int nproc, int argc, char **argv, char **extra_env);
/* ----------------------------------------------------------------------------------- */

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "FAILED CHECK (rank %d) %s:%d: %s\n", \
  AMUDP_SPMDMyProc(), __FILE__, __LINE__, #c); fflush(stderr); AMUDP_SPMDExit(1); } } while (0)

static ep_t ep;
static char seg[1024];
static volatile int replies, hooks, exitcb = -1;

/* GASNet's gasnetc_AM{Request,Reply}* pass their va_list on: do the same */
static int req_short(amudp_node_t d, handler_t h, int n, ...) {
  va_list ap; va_start(ap, n); int rc = AMUDP_RequestVA(ep, d, h, n, ap); va_end(ap); return rc;
}
static int req_medium(amudp_node_t d, handler_t h, void *s, size_t nb, int n, ...) {
  va_list ap; va_start(ap, n); int rc = AMUDP_RequestIVA(ep, d, h, s, nb, n, ap); va_end(ap); return rc;
}
static int req_long(amudp_node_t d, handler_t h, void *s, size_t nb, uintptr_t off, int n, ...) {
  va_list ap; va_start(ap, n); int rc = AMUDP_RequestXferVA(ep, d, h, s, nb, off, 0, n, ap); va_end(ap); return rc;
}
static int rep_short(void *t, handler_t h, int n, ...) {
  va_list ap; va_start(ap, n); int rc = AMUDP_ReplyVA(t, h, n, ap); va_end(ap); return rc;
}
static int rep_medium(void *t, handler_t h, void *s, size_t nb, int n, ...) {
  va_list ap; va_start(ap, n); int rc = AMUDP_ReplyIVA(t, h, s, nb, n, ap); va_end(ap); return rc;
}
static int rep_long(void *t, handler_t h, void *s, size_t nb, uintptr_t off, int n, ...) {
  va_list ap; va_start(ap, n); int rc = AMUDP_ReplyXferVA(t, h, s, nb, off, n, ap); va_end(ap); return rc;
}

static void src_is(void *t, int want) { int s = -1; CHECK(AMUDP_GetSourceId(t, &s) == 0 && s == want); }
static void h_s(void *t, int a, int b) { src_is(t, 0); CHECK(a == 1 && b == 2); CHECK(rep_short(t, 20, 1, 11) == 0); }
static void h_m(void *t, void *buf, size_t n, int a) {
  src_is(t, 0); CHECK(n == 10 && a == 3 && !memcmp(buf, "medium-msg", 10));
  CHECK(rep_medium(t, 21, buf, n, 1, 12) == 0);
}
static void h_l(void *t, void *buf, size_t n, int a) {
  src_is(t, 0); CHECK(n == 8 && a == 4 && buf == seg + 100 && !memcmp(buf, "longmsg!", 8));
  CHECK(rep_long(t, 22, buf, n, 200, 1, 13) == 0);
}
static void h_rs(void *t, int a) { src_is(t, 1); CHECK(a == 11); replies++; }
static void h_rm(void *t, void *buf, size_t n, int a) { src_is(t, 1); CHECK(n == 10 && a == 12 && !memcmp(buf, "medium-msg", 10)); replies++; }
static void h_rl(void *t, void *buf, size_t n, int a) { src_is(t, 1); CHECK(n == 8 && a == 13 && buf == seg + 200); replies++; }
static void pre(amudp_category_t c, int r, int h, void *t, void *b, size_t n, int na, uint32_t *a) {
  (void)c; (void)r; (void)h; (void)t; (void)b; (void)n; (void)na; (void)a; hooks++;
}
static void post(amudp_category_t c, int r) { (void)c; (void)r; }
static void on_exit_cb(int code) { exitcb = code; fprintf(stderr, "symbols: exit callback %d\n", code); }

int main(int argc, char **argv) {
  eb_t eb;
  uint64_t npid = 0;
  int letters = 0, i;
  for (i = 0; AMUDP_Spawnfn_Desc[i].abbrev; i++)
    letters += (AMUDP_Spawnfn_Desc[i].abbrev == 'S') + (AMUDP_Spawnfn_Desc[i].abbrev == 'L') * 2 +
               (AMUDP_Spawnfn_Desc[i].abbrev == 'C') * 4;
  if (letters != 7) { fprintf(stderr, "FAILED CHECK: AMUDP_Spawnfn_Desc\n"); return 1; }
  AMX_VerboseErrors = 1;  /* one object under both names */
  if (AMUDP_VerboseErrors != 1) { fprintf(stderr, "FAILED CHECK: AMX_VerboseErrors\n"); return 1; }
  AMX_VerboseErrors = 0;
  if (AMUDP_SPMDStartup_AMUDP_NDEBUG(&argc, &argv, 0, 0, NULL, &npid, &eb, &ep) != 0) {
    fprintf(stderr, "FAILED CHECK: AMUDP_SPMDStartup_AMUDP_NDEBUG\n");
    return 1;
  }
  int me = AMUDP_SPMDMyProc();
  CHECK(AMUDP_SPMDIsWorker(argv) == 1 && AMUDP_SPMDNumProcs() == 2 && npid != 0);
  CHECK(AMX_ProcessLabel != NULL && AMUDP_SPMDkillmyprocess != NULL);
  AMUDP_PoliteSync = 1;
  CHECK(AMUDP_SPMDSetExitCallback(on_exit_cb) == 0);
  CHECK(AM_SetSeg(ep, seg, sizeof seg) == 0);
  CHECK(_AM_SetHandler(ep, 10, (amudp_handler_fn_t)h_s) == 0);
  CHECK(_AM_SetHandler(ep, 11, (amudp_handler_fn_t)h_m) == 0);
  CHECK(_AM_SetHandler(ep, 12, (amudp_handler_fn_t)h_l) == 0);
  CHECK(_AM_SetHandler(ep, 20, (amudp_handler_fn_t)h_rs) == 0);
  CHECK(_AM_SetHandler(ep, 21, (amudp_handler_fn_t)h_rm) == 0);
  CHECK(_AM_SetHandler(ep, 22, (amudp_handler_fn_t)h_rl) == 0);
  CHECK(AMUDP_SetHandlerCallbacks(ep, pre, post) == 0);
  CHECK(AMUDP_ResetEndpointStatistics(ep) == 0);
  int svc = -1;
  CHECK(AMUDP_SPMDHandleControlTraffic(&svc) == 0 && svc == 0);
  int ranks[2] = {-1, -1};
  CHECK(AMUDP_SPMDAllGather(&me, ranks, sizeof me) == 0 && ranks[0] == 0 && ranks[1] == 1);
  CHECK(AMUDP_SPMDBarrier() == 0);
  if (me == 0) {
    memcpy(seg + 300, "longmsg!", 8);
    CHECK(req_short(1, 10, 2, 1, 2) == 0);
    CHECK(req_medium(1, 11, "medium-msg", 10, 1, 3) == 0);
    CHECK(req_long(1, 12, seg + 300, 8, 100, 1, 4) == 0);
    while (replies < 3) CHECK(AM_Poll(eb) == 0);
  }
  CHECK(AMUDP_SPMDBarrier() == 0);
  CHECK(hooks == 3);
  /* statistics in AMUDP's 320-byte struct: nothing written past it */
  struct { amudp_stats_t s; unsigned char guard[256]; } st;
  memset(&st, 0xA5, sizeof st);
  CHECK(AMUDP_GetEndpointStatistics(ep, &st.s) == 0);
  for (i = 0; i < (int)sizeof st.guard; i++) CHECK(st.guard[i] == 0xA5);
  uint64_t reqs = st.s.RequestsSent[0] + st.s.RequestsSent[1] + st.s.RequestsSent[2];
  uint64_t reps = st.s.RepliesSent[0] + st.s.RepliesSent[1] + st.s.RepliesSent[2];
  CHECK(me == 0 ? reqs == 3 && reps == 0 : reqs == 0 && reps == 3);
  amudp_stats_t sum = AMUDP_initial_stats;
  CHECK(sum.RequestMinLatency == UINT64_MAX && sum.TotalBytesSent == 0);
  CHECK(AMUDP_AggregateStatistics(&sum, &st.s) == 0);
  CHECK(sum.RequestsSent[1] == st.s.RequestsSent[1] && sum.TotalBytesSent == st.s.TotalBytesSent);
  const char *dump = AMUDP_DumpStatistics(NULL, &sum, 0);
  CHECK(dump != NULL && strlen(dump) > 0);
  CHECK(AMUDP_SetTranslationTag(ep, 5, 1) != 0); /* index 5 is not mapped: refused, no crash */
  const char *home = AMUDP_SPMDgetenvMaster("SYMBOLS_PROBE");
  CHECK(home != NULL && !strcmp(home, "from-master"));
  (void)AMUDP_SetUDPInterface; (void)AMUDP_SPMDLocalSpawn; (void)AMUDP_SPMDSshSpawn;
  (void)AMUDP_SPMDCustomSpawn; (void)AMUDP_Request; (void)AMUDP_Reply; (void)AMX_SilentMode;
  printf("symbols: rank %d ok\n", me);
  fflush(stdout);
  AMUDP_SPMDExit(0);
  return 1;
}
