/*
 * amudp_compile.c -- compile (and link, never run) check of the AMUDP drop-in headers
 * include/amudp.h and include/amudp_spmd.h.
 *
 * It uses every AMX_* name that GASNet's AMX test and application code references (spec
 * §4.3: apputils.h, apputils.c, testam.h, testam.c and the other tests), the AMUDP_*
 * names and types of §4.1-4.4, AMUDP's link-name spellings (AM_Init_AMUDP_{DEBUG,NDEBUG},
 * AMUDP_SPMDStartup_AMUDP_{DEBUG,NDEBUG}), assignments to the knobs, and a call through
 * the AMX_SPMDkillmyprocess pointer.  It must compile cleanly with -Wall -Wextra -Werror
 * as C11 and as C++, in every build mode; c-tests/amudp_compile.sh drives it:
 *
 *   -DEXPECT_DEBUG=0|1    the build mode the headers must derive (AMX_DEBUG / AMX_NDEBUG)
 *   -DEXPECT_VERBOSE=0|1  whether AMX_DEBUG_VERBOSE must end up 1
 *
 * Like apputils.h, it may test AMUDP before including any header (when -DAMUDP is
 * given).
 */
#if defined(AMUDP) && defined(AMMPI)
#error "AMUDP and AMMPI both defined"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amudp_spmd.h"
#include "amudp.h"      /* include guards: both orders and repeats are harmless */
#include "amudp_spmd.h"

#ifdef __cplusplus
#define AC_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define AC_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#ifndef EXPECT_DEBUG
#define EXPECT_DEBUG 0
#endif
#ifndef EXPECT_VERBOSE
#define EXPECT_VERBOSE 0
#endif

/* ---- configuration macros (§0) ---------------------------------------------------- */
#if !defined(AMUDP) || AMUDP != 1
#error "AMUDP must be defined as 1"
#endif
#if EXPECT_DEBUG
  #if !defined(AMUDP_DEBUG) || defined(AMUDP_NDEBUG) || !defined(AMX_DEBUG) || defined(AMX_NDEBUG)
  #error "expected the DEBUG configuration"
  #endif
#else
  #if defined(AMUDP_DEBUG) || !defined(AMUDP_NDEBUG) || defined(AMX_DEBUG) || !defined(AMX_NDEBUG)
  #error "expected the NDEBUG configuration"
  #endif
#endif
#if EXPECT_VERBOSE
  #if !defined(AMX_DEBUG_VERBOSE) || AMX_DEBUG_VERBOSE != 1
  #error "expected AMX_DEBUG_VERBOSE 1"
  #endif
#else
  #if defined(AMX_DEBUG_VERBOSE) && (AMX_DEBUG_VERBOSE + 0)
  #error "AMX_DEBUG_VERBOSE unexpectedly set"
  #endif
#endif
/* what apputils.h does with the mode */
#if defined(AMX_DEBUG) && !defined(AC_DEBUG)
#define AC_DEBUG 1
#elif defined(AMX_NDEBUG)
#define AC_DEBUG 0
#endif
AC_STATIC_ASSERT(AC_DEBUG == EXPECT_DEBUG, "mode");

#if AMUDP_LIBRARY_VERSION_MAJOR != 3 || AMUDP_LIBRARY_VERSION_MINOR < 15
#error "AMUDP_LIBRARY_VERSION_MAJOR/MINOR"
#endif
AC_STATIC_ASSERT(sizeof(AMUDP_LIBRARY_VERSION_STR) == sizeof("3.16"), "version string");
AC_STATIC_ASSERT(sizeof(AMX_STRINGIFY(AMUDP_LIBRARY_VERSION)) == 5, "AMX_STRINGIFY");
#define AC_FORTY 40
AC_STATIC_ASSERT(AMX_CONCAT(AC_FO, RTY) == 40, "AMX_CONCAT");

/* ---- constants (§2.1) -------------------------------------------------------------- */
#if AMUDP_MAX_MEDIUM < 512 || AMUDP_MAX_SHORT != 16 || AMUDP_MAX_NUMHANDLERS != 256
#error "AMUDP_MAX_* must be usable in #if"
#endif
AC_STATIC_ASSERT(AMUDP_MAX_SHORT == AM_MaxShort(), "MAX_SHORT");
AC_STATIC_ASSERT(AMUDP_MAX_MEDIUM == AM_MaxMedium() && AMUDP_MAX_MEDIUM >= 65000, "MAX_MEDIUM");
AC_STATIC_ASSERT(AMUDP_MAX_LONG == AM_MaxLong() && AMUDP_MAX_LONG >= 65000, "MAX_LONG");
AC_STATIC_ASSERT(AMUDP_MAX_NUMHANDLERS == 256, "MAX_NUMHANDLERS");
AC_STATIC_ASSERT(AMUDP_MAX_NUMTRANSLATIONS == (1U << 20), "MAX_NUMTRANSLATIONS");
AC_STATIC_ASSERT(AMUDP_INIT_NUMTRANSLATIONS == 256, "INIT_NUMTRANSLATIONS");
AC_STATIC_ASSERT(AMUDP_MAX_SEGLENGTH == (uintptr_t)-1, "MAX_SEGLENGTH");
AC_STATIC_ASSERT(AMUDP_MAX_BUNDLES >= 255, "MAX_BUNDLES");
AC_STATIC_ASSERT(AMUDP_MAX_NETWORKDEPTH == 1024, "MAX_NETWORKDEPTH");
AC_STATIC_ASSERT(AMUDP_MAX_RECVDEPTH >= 65534, "MAX_RECVDEPTH");
AC_STATIC_ASSERT(AMUDP_MAX_SPMDPROCS == AMUDP_MAX_NUMTRANSLATIONS, "MAX_SPMDPROCS");
AC_STATIC_ASSERT(AMUDP_COLLECT_STATS == 1 && AMUDP_COLLECT_LATENCY_STATS == 1, "stats");
AC_STATIC_ASSERT(AMUDP_BADHANDLERVAL(7) == 0, "BADHANDLERVAL");

/* ---- types (§1) --------------------------------------------------------------------- */
AC_STATIC_ASSERT(sizeof(amudp_node_t) == 4 && (amudp_node_t)-1 > 0, "amudp_node_t is uint32_t");
AC_STATIC_ASSERT(sizeof(amx_tick_t) == 8 && (amx_tick_t)-1 > 0, "amx_tick_t is uint64_t");
#ifndef _AMX_TICK_T
#error "_AMX_TICK_T guards amx_tick_t"
#endif
AC_STATIC_ASSERT(amudp_Short == 0 && amudp_Medium == 1 && amudp_Long == 2 &&
                 amudp_NumCategories == 3, "amudp categories");
AC_STATIC_ASSERT(amx_Short == amudp_Short && amx_Medium == amudp_Medium &&
                 amx_Long == amudp_Long, "amx categories");
AC_STATIC_ASSERT(AM_NOEVENTS == 0 && AM_NOTEMPTY == 1 && AM_NUMEVENTMASKS == 2, "event masks");
AC_STATIC_ASSERT(AM_SEQ == 0 && AM_PAR == 1 && AM_NUM_BUNDLE_MODES == 2, "bundle modes");
AC_STATIC_ASSERT(sizeof(amudp_eventmask_t) >= 1 && sizeof(amudp_bundle_mode_t) >= 1, "enums");
/* printGlobalStats sends the stats in one medium message */
AC_STATIC_ASSERT(sizeof(amx_stats_t) < AM_MaxMedium(), "amx_stats_t fits in a medium");
AC_STATIC_ASSERT(sizeof(amudp_stats_t) == 40 * sizeof(uint64_t), "amudp_stats_t: AMUDP's 40 counters");

/* ---- handlers with the prototypes the tests declare -------------------------------- */
static volatile int ac_sink;
static void ac_short2(void *token, int a0, int a1) { (void)token; ac_sink = a0 + a1; }
/* apputils.c: old-style `int nbytes` */
static void ac_stats_request_handler(void *token, void *buf, int nbytes, int procnum)
{
  (void)token; (void)buf; ac_sink = nbytes + procnum;
}
static void ac_long(void *token, void *buf, size_t nbytes, int32_t a0)
{
  (void)token; (void)buf; ac_sink = (int)nbytes + a0;
}
static void ac_returned(int status, op_t opcode, void *token)
{
  (void)token; ac_sink = status + opcode;
}
static void ac_exit_callback(int code) { ac_sink = code; }
static void ac_kill(int code) { ac_sink = code; }

/* testam.c's handler checks: source id, source name, category */
int ac_testam_handler_checks(void *token, en_t myname, ep_t myep, tag_t mytag);
int ac_testam_handler_checks(void *token, en_t myname, ep_t myep, tag_t mytag)
{
  int srcid = -1, isreq = 0, bad = 0;
  handler_t h = 0;
  amx_category_t cat = amx_Long;
  en_t src;
  ep_t dst;
  tag_t t;
  bad |= AMX_GetSourceId(token, &srcid) != AM_OK || srcid != 0;
  bad |= AM_GetSourceEndpoint(token, &src) != AM_OK || !AMX_enEqual(src, myname);
  bad |= AM_GetDestEndpoint(token, &dst) != AM_OK || dst != myep;
  bad |= AM_GetMsgTag(token, &t) != AM_OK || t != mytag;
  bad |= AMX_GetTokenInfo(token, &h, &cat, &isreq) != AM_OK || cat != amx_Short || !isreq;
  bad |= cat == amx_Medium;
  /* the AMUDP spellings */
  bad |= AMUDP_GetSourceId(token, &srcid) != AM_OK;
  bad |= AMUDP_GetTokenInfo(token, &h, (amudp_category_t *)&cat, &isreq) != AM_OK;
  bad |= !AMUDP_enEqual(src, myname);
  return bad;
}

/* ---- apputils.h / apputils.c ---------------------------------------------------------- */
#define AC_AM_Safe(fncall) do {                                                         \
    int _retcode = (fncall);                                                            \
    if (_retcode != AM_OK) {                                                            \
      fprintf(stderr, "ERROR calling: %s (%s:%i)\n", #fncall, __FILE__, __LINE__);     \
      AMX_SPMDExit(-1);                                                                 \
      AMX_FatalErr("AMX_SPMDExit failed");                                              \
    }                                                                                   \
  } while (0)

int ac_test_startup(int argc, char **argv);
int ac_test_startup(int argc, char **argv)
{
  eb_t eb;
  ep_t ep;
  uint64_t networkpid;
  AMX_VerboseErrors = 1;
  if (!AMX_SPMDIsWorker(argv)) {
    fprintf(stderr, "master\n");
  }
  AC_AM_Safe(AMX_SPMDStartup(&argc, &argv, 0, &networkpid, &eb, &ep));
  AC_AM_Safe(AM_SetHandler(ep, 0, ac_returned));
  AC_AM_Safe(AM_SetHandler(ep, 225, (amx_handler_fn_t)ac_stats_request_handler));
  AC_AM_Safe(AM_SetHandler(ep, 100, ac_short2));
  AC_AM_Safe(AM_SetHandler(ep, 101, (amx_handler_fn_t)ac_long));
  AC_AM_Safe(AMX_SPMDBarrier());
  if (AMX_SPMDMyProc() == 0 && AMX_SPMDNumProcs() > 1) {
    AC_AM_Safe(AM_Request2(ep, 1, 100, AMX_SPMDMyProc(), networkpid));
  }
  AMX_SPMDExit(0);
  return 0;
}

int ac_print_global_stats(ep_t ep);
int ac_print_global_stats(ep_t ep)
{
  static amx_stats_t statsall[4];
  amx_stats_t stats, globalStats = AMX_initial_stats;
  int i, rc = 0;
  rc |= AMX_GetEndpointStatistics(ep, &stats);
  rc |= AM_RequestI1(ep, 0, 225, &stats, sizeof(amx_stats_t), AMX_SPMDMyProc());
  for (i = 0; i < AMX_SPMDNumProcs() && i < 4; i++) {
    rc |= AMX_AggregateStatistics(&globalStats, &statsall[i]);
  }
  fputs(AMX_DumpStatistics(stderr, &globalStats, 1), stdout);
  (void)AMX_DumpStatistics(NULL, &stats, 0);
  rc |= AMX_ResetEndpointStatistics(ep);
  /* the AMUDP spellings */
  rc |= AMUDP_GetEndpointStatistics(ep, &stats);
  rc |= AMUDP_AggregateStatistics(&globalStats, &stats);
  rc |= AMUDP_ResetEndpointStatistics(ep);
  (void)AMUDP_DumpStatistics(stdout, &globalStats, 0);
  globalStats = AMUDP_initial_stats;
  if (globalStats.RequestMinLatency != (amx_tick_t)-1) rc |= 1;
  if (stats.RequestsSent[amx_Short] + stats.RepliesSent[amudp_Long] > 0) rc |= 2;
  return rc;
}

/* ---- testam.h: token-pasted request names, FATALERR ---------------------------------- */
#define AC_FATALERR(msg) AMX_FatalErr("%s: %s (%s:%i)", "Node", msg, __FILE__, __LINE__)
#define AC_REQ(num) AMX_CONCAT(AM_Request, num)
#define AC_REQX(num) AMX_CONCAT(AM_RequestXfer, num)
#define AC_REPLYX(num) AMX_CONCAT(AM_ReplyXfer, num)

int ac_testam(ep_t ep, void *token, char **argv);
int ac_testam(ep_t ep, void *token, char **argv)
{
  static char buf[64];
  static void *ptrs[16];
  void *mine = buf;
  int rc = 0;
  const char *v;
  rc |= AC_REQ(0)(ep, 0, 100);
  rc |= AC_REQ(2)(ep, 0, 100, 1, 2);
  rc |= AC_REQX(1)(ep, 0, 24, 101, buf, sizeof buf, 0xBABE7001);
  rc |= AC_REPLYX(1)(token, 24, 101, buf, sizeof buf, 0xBABE7001);
  rc |= AMX_SPMDSetExitCallback(ac_exit_callback);
  rc |= AMX_SPMDSetExitCallback(NULL);
  v = AMX_SPMDgetenvMaster("ABC");
  if (!v || strcmp(v, "abc") != 0) AC_FATALERR("getenvMaster");
  rc |= AMX_SPMDIsWorker(argv);
  rc |= AMX_SPMDAllGather(&mine, ptrs, sizeof(mine));
  rc |= AMX_SPMDBarrier();
  rc |= AMX_SetTranslationTag(ep, 0, (tag_t)0x1234ABCD);
  rc |= AMUDP_SetTranslationTag(ep, 0, (tag_t)0x1234ABCD);
  if (rc) {
    /* testam takes the address of the kill pointer and calls through it */
    void (*killer)(int) = AMX_SPMDkillmyprocess;
    (*killer)(1);
    AMX_SPMDkillmyprocess(2);
    (*AMX_SPMDkillmyprocess)(3);
  }
  {
    void (*saved)(int) = AMUDP_SPMDkillmyprocess;
    AMX_SPMDkillmyprocess = ac_kill;
    AMUDP_SPMDkillmyprocess = saved;
  }
  return AMX_SPMDExit(rc);
}

/* ---- knobs (§4.1): real, assignable objects ---------------------------------------- */
int ac_knobs(void);
int ac_knobs(void)
{
  int *p = &AMX_VerboseErrors;
  const char **label = &AMX_ProcessLabel;
  AMX_VerboseErrors = 1;
  AMUDP_VerboseErrors = 0;
  AMX_SilentMode = 1;
  AMUDP_SilentMode = 0;
  AMX_ProcessLabel = "Node 0";
  AMUDP_ProcessLabel = *label;
  AMUDP_PoliteSync = 1;
  if (AMX_VerboseErrors) AMX_FatalErr("verbose %d, label %s", *p, AMX_ProcessLabel);
  if (AMUDP_SilentMode) AMUDP_FatalErr("silent");
  return AMUDP_PoliteSync + *p;
}

/* ---- link names, start-up variants, SPMD names (§0, §4.4) ------------------------- */
int ac_link_names(int argc, char **argv);
int ac_link_names(int argc, char **argv)
{
  eb_t eb;
  ep_t ep;
  uint64_t npid;
  int rc = 0, n = 0;
  amudp_spawnfn_t spawn = AMUDP_SPMDLocalSpawn;
  const amudp_spawnfn_desc_t *d;
  amudp_exitcallback_t cb = ac_exit_callback;
  rc |= AM_Init();
  rc |= AM_Init_AMUDP_DEBUG();
  rc |= AM_Init_AMUDP_NDEBUG();
  rc |= AMX_CONCAT(AM_Init_AMUDP, AMUDP_DEBUG_CONFIG)();   /* AMUDP's own spelling */
  rc |= AMUDP_SPMDStartup(&argc, &argv, 2, 0, spawn, &npid, &eb, &ep);
  rc |= AMUDP_SPMDStartup_AMUDP_DEBUG(&argc, &argv, 0, 0, NULL, &npid, &eb, &ep);
  rc |= AMUDP_SPMDStartup_AMUDP_NDEBUG(&argc, &argv, 0, 0, AMUDP_SPMDSshSpawn, NULL, &eb, &ep);
  rc |= AMX_CONCAT(AMUDP_SPMDStartup_AMUDP, AMUDP_DEBUG_CONFIG)(&argc, &argv, 0, 0,
                                                                AMUDP_SPMDCustomSpawn, &npid,
                                                                &eb, &ep);
  for (d = AMUDP_Spawnfn_Desc; d->abbrev != '\0'; d++) {
    if (d->abbrev == 'L' && d->fnptr == AMUDP_SPMDLocalSpawn && d->desc) n++;
  }
  rc |= AMUDP_SPMDSetExitCallback(cb);
  rc |= AMUDP_SPMDIsWorker(argv);
  rc |= AMUDP_SPMDNumProcs() + AMUDP_SPMDMyProc();
  rc |= AMUDP_SPMDBarrier();
  rc |= AMUDP_SPMDAllGather(&n, &n, sizeof n);
  if (AMUDP_SPMDgetenvMaster("X") || AMUDP_check_env_prefix("RAMP_")) rc |= 4;
  AMUDP_SPMDSetProc(0);
  rc |= AMUDP_SPMDHandleControlTraffic(&n);
  rc |= AMUDP_SPMDHandleControlTraffic(NULL);
  rc |= AMUDP_SetUDPInterface(0x7F000001u);
  rc |= AMUDP_SetHandlerCallbacks(ep, NULL, NULL);
  rc |= AMUDP_SPMDExit(rc);
  return rc + n;
}

/* ---- AMUDP request/reply entry points with AMUDP's parameter types (§2.12) ---------- */
typedef int (*ac_request_fn)(ep_t, amudp_node_t, handler_t, int, ...);
typedef int (*ac_requesti_fn)(ep_t, amudp_node_t, handler_t, void *, size_t, int, ...);
typedef int (*ac_requestxfer_fn)(ep_t, amudp_node_t, handler_t, void *, size_t, uintptr_t,
                                 int, int, ...);
typedef int (*ac_reply_fn)(void *, handler_t, int, ...);
typedef int (*ac_replyi_fn)(void *, handler_t, void *, size_t, int, ...);
typedef int (*ac_replyxfer_fn)(void *, handler_t, void *, size_t, uintptr_t, int, ...);
typedef int (*ac_requestva_fn)(ep_t, amudp_node_t, handler_t, int, va_list);
typedef int (*ac_requestiva_fn)(ep_t, amudp_node_t, handler_t, void *, size_t, int, va_list);
typedef int (*ac_requestxferva_fn)(ep_t, amudp_node_t, handler_t, void *, size_t, uintptr_t,
                                   int, int, va_list);
typedef int (*ac_replyva_fn)(void *, handler_t, int, va_list);
typedef int (*ac_replyiva_fn)(void *, handler_t, void *, size_t, int, va_list);
typedef int (*ac_replyxferva_fn)(void *, handler_t, void *, size_t, uintptr_t, int, va_list);
typedef int (*ac_settag_fn)(ep_t, int, tag_t);
typedef int (*ac_getstats_fn)(ep_t, amudp_stats_t *);
typedef int (*ac_setiface_fn)(uint32_t);
typedef int (*ac_setcb_fn)(ep_t, AMUDP_preHandlerCallback_t, AMUDP_postHandlerCallback_t);
typedef int (*ac_startup_fn)(int *, char ***, int, int, amudp_spawnfn_t, uint64_t *, eb_t *,
                             ep_t *);

int ac_entry_points(ep_t ep, void *token, void *src, size_t n);
int ac_entry_points(ep_t ep, void *token, void *src, size_t n)
{
  ac_request_fn rq = AMUDP_Request;
  ac_requesti_fn rqi = AMUDP_RequestI;
  ac_requestxfer_fn rqx = AMUDP_RequestXfer;
  ac_reply_fn rp = AMUDP_Reply;
  ac_replyi_fn rpi = AMUDP_ReplyI;
  ac_replyxfer_fn rpx = AMUDP_ReplyXfer;
  ac_requestva_fn rqva = AMUDP_RequestVA;
  ac_requestiva_fn rqiva = AMUDP_RequestIVA;
  ac_requestxferva_fn rqxva = AMUDP_RequestXferVA;
  ac_replyva_fn rpva = AMUDP_ReplyVA;
  ac_replyiva_fn rpiva = AMUDP_ReplyIVA;
  ac_replyxferva_fn rpxva = AMUDP_ReplyXferVA;
  ac_settag_fn st = AMX_SetTranslationTag;
  ac_getstats_fn gs = AMX_GetEndpointStatistics;
  ac_setiface_fn si = AMUDP_SetUDPInterface;
  ac_setcb_fn scb = AMUDP_SetHandlerCallbacks;
  ac_startup_fn su = AMUDP_SPMDStartup;
  int rc = 0;
  rc |= rq(ep, 0, 1, 2, 10, 20);
  rc |= rqi(ep, 0, 1, src, n, 1, 10);
  rc |= rqx(ep, 0, 1, src, n, 0, 0, 0);
  rc |= rp(token, 1, 0);
  rc |= rpi(token, 1, src, n, 0);
  rc |= rpx(token, 1, src, n, 8, 1, 5);
  rc |= AMUDP_Request(ep, 0, 1, 0);
  rc |= AMUDP_RequestI(ep, 0, 1, src, n, 0);
  rc |= AMUDP_RequestXfer(ep, 0, 1, src, n, 0, 1, 1, 7);
  rc |= AMUDP_Reply(token, 1, 1, 3);
  rc |= AMUDP_ReplyI(token, 1, src, n, 0);
  rc |= AMUDP_ReplyXfer(token, 1, src, n, 0, 0);
  rc |= (rqva == NULL) + (rqiva == NULL) + (rqxva == NULL) + (rpva == NULL) +
        (rpiva == NULL) + (rpxva == NULL) + (st == NULL) + (gs == NULL) + (si == NULL) +
        (scb == NULL) + (su == NULL);
  return rc;
}

int main(void)
{
  return 0;
}
