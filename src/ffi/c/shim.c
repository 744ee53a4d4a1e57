/*
 * shim.c -- the C variadic entry points of ramp's AM-2 API.
 *
 * Stable Rust cannot define C-variadic functions, so the `...` and `va_list` forms of
 * ramp_Request* / ramp_Reply* (what the AM_RequestM ... AM_ReplyXferM macros of am.h
 * expand to) live here.  Each one reads `numargs` ints -- the AM-2 macros cast every
 * argument to int32_t, which the call promotes to int -- into an int32_t[16] and
 * forwards to the Rust-implemented ramp_RequestArgv / ramp_ReplyArgv (ramp.h).
 * numargs outside 0..16 returns AM_ERR_BAD_ARG without reading any variable argument.
 *
 * Compiled by build.rs with include/ on the include path; the exported names are
 * listed in exports.txt (turned into the linker version script).  Must stay valid C99
 * and C++.
 */
#include "ramp.h"

#if defined(__GNUC__)
#define RAMP_SHIM_EXPORT __attribute__((visibility("default")))
#else
#define RAMP_SHIM_EXPORT
#endif

#define RAMP_SHIM_MAX_ARGS 16

/* Copies numargs ints out of ap into args[]; numargs must already be in 0..16. */
static void ramp_shim_read_args(int numargs, va_list ap, int32_t *args)
{
  int i;
  for (i = 0; i < numargs; i++) {
    args[i] = (int32_t)va_arg(ap, int);
  }
}

#define RAMP_SHIM_BAD_NUMARGS(n) ((n) < 0 || (n) > RAMP_SHIM_MAX_ARGS)

/* ---------------------------------------------------------------------------------------
 * va_list forms
 * ------------------------------------------------------------------------------------- */

RAMP_SHIM_EXPORT int ramp_RequestVA(ep_t ep, uint32_t dest, handler_t handler, int numargs,
                                    va_list argptr)
{
  int32_t args[RAMP_SHIM_MAX_ARGS] = {0};
  if (RAMP_SHIM_BAD_NUMARGS(numargs)) return AM_ERR_BAD_ARG;
  ramp_shim_read_args(numargs, argptr, args);
  return ramp_RequestArgv(ep, dest, handler, ramp_Short, NULL, 0, 0, 0, numargs, args);
}

RAMP_SHIM_EXPORT int ramp_RequestIVA(ep_t ep, uint32_t dest, handler_t handler,
                                     void *source_addr, size_t nbytes, int numargs,
                                     va_list argptr)
{
  int32_t args[RAMP_SHIM_MAX_ARGS] = {0};
  if (RAMP_SHIM_BAD_NUMARGS(numargs)) return AM_ERR_BAD_ARG;
  ramp_shim_read_args(numargs, argptr, args);
  return ramp_RequestArgv(ep, dest, handler, ramp_Medium, source_addr, nbytes, 0, 0,
                          numargs, args);
}

RAMP_SHIM_EXPORT int ramp_RequestXferVA(ep_t ep, uint32_t dest, handler_t handler,
                                        void *source_addr, size_t nbytes,
                                        uintptr_t dest_offset, int async, int numargs,
                                        va_list argptr)
{
  int32_t args[RAMP_SHIM_MAX_ARGS] = {0};
  if (RAMP_SHIM_BAD_NUMARGS(numargs)) return AM_ERR_BAD_ARG;
  ramp_shim_read_args(numargs, argptr, args);
  return ramp_RequestArgv(ep, dest, handler, ramp_Long, source_addr, nbytes, dest_offset,
                          async, numargs, args);
}

RAMP_SHIM_EXPORT int ramp_ReplyVA(void *token, handler_t handler, int numargs, va_list argptr)
{
  int32_t args[RAMP_SHIM_MAX_ARGS] = {0};
  if (RAMP_SHIM_BAD_NUMARGS(numargs)) return AM_ERR_BAD_ARG;
  ramp_shim_read_args(numargs, argptr, args);
  return ramp_ReplyArgv(token, handler, ramp_Short, NULL, 0, 0, numargs, args);
}

RAMP_SHIM_EXPORT int ramp_ReplyIVA(void *token, handler_t handler, void *source_addr,
                                   size_t nbytes, int numargs, va_list argptr)
{
  int32_t args[RAMP_SHIM_MAX_ARGS] = {0};
  if (RAMP_SHIM_BAD_NUMARGS(numargs)) return AM_ERR_BAD_ARG;
  ramp_shim_read_args(numargs, argptr, args);
  return ramp_ReplyArgv(token, handler, ramp_Medium, source_addr, nbytes, 0, numargs, args);
}

RAMP_SHIM_EXPORT int ramp_ReplyXferVA(void *token, handler_t handler, void *source_addr,
                                      size_t nbytes, uintptr_t dest_offset, int numargs,
                                      va_list argptr)
{
  int32_t args[RAMP_SHIM_MAX_ARGS] = {0};
  if (RAMP_SHIM_BAD_NUMARGS(numargs)) return AM_ERR_BAD_ARG;
  ramp_shim_read_args(numargs, argptr, args);
  return ramp_ReplyArgv(token, handler, ramp_Long, source_addr, nbytes, dest_offset,
                        numargs, args);
}

/* ---------------------------------------------------------------------------------------
 * `...` forms: check numargs first (so a bad count never touches the argument list),
 * then forward to the va_list twin.
 * ------------------------------------------------------------------------------------- */

RAMP_SHIM_EXPORT int ramp_Request(ep_t ep, uint32_t dest, handler_t handler, int numargs, ...)
{
  va_list ap;
  int rc;
  if (RAMP_SHIM_BAD_NUMARGS(numargs)) return AM_ERR_BAD_ARG;
  va_start(ap, numargs);
  rc = ramp_RequestVA(ep, dest, handler, numargs, ap);
  va_end(ap);
  return rc;
}

RAMP_SHIM_EXPORT int ramp_RequestI(ep_t ep, uint32_t dest, handler_t handler,
                                   void *source_addr, size_t nbytes, int numargs, ...)
{
  va_list ap;
  int rc;
  if (RAMP_SHIM_BAD_NUMARGS(numargs)) return AM_ERR_BAD_ARG;
  va_start(ap, numargs);
  rc = ramp_RequestIVA(ep, dest, handler, source_addr, nbytes, numargs, ap);
  va_end(ap);
  return rc;
}

RAMP_SHIM_EXPORT int ramp_RequestXfer(ep_t ep, uint32_t dest, handler_t handler,
                                      void *source_addr, size_t nbytes, uintptr_t dest_offset,
                                      int async, int numargs, ...)
{
  va_list ap;
  int rc;
  if (RAMP_SHIM_BAD_NUMARGS(numargs)) return AM_ERR_BAD_ARG;
  va_start(ap, numargs);
  rc = ramp_RequestXferVA(ep, dest, handler, source_addr, nbytes, dest_offset, async,
                          numargs, ap);
  va_end(ap);
  return rc;
}

RAMP_SHIM_EXPORT int ramp_Reply(void *token, handler_t handler, int numargs, ...)
{
  va_list ap;
  int rc;
  if (RAMP_SHIM_BAD_NUMARGS(numargs)) return AM_ERR_BAD_ARG;
  va_start(ap, numargs);
  rc = ramp_ReplyVA(token, handler, numargs, ap);
  va_end(ap);
  return rc;
}

RAMP_SHIM_EXPORT int ramp_ReplyI(void *token, handler_t handler, void *source_addr,
                                 size_t nbytes, int numargs, ...)
{
  va_list ap;
  int rc;
  if (RAMP_SHIM_BAD_NUMARGS(numargs)) return AM_ERR_BAD_ARG;
  va_start(ap, numargs);
  rc = ramp_ReplyIVA(token, handler, source_addr, nbytes, numargs, ap);
  va_end(ap);
  return rc;
}

RAMP_SHIM_EXPORT int ramp_ReplyXfer(void *token, handler_t handler, void *source_addr,
                                    size_t nbytes, uintptr_t dest_offset, int numargs, ...)
{
  va_list ap;
  int rc;
  if (RAMP_SHIM_BAD_NUMARGS(numargs)) return AM_ERR_BAD_ARG;
  va_start(ap, numargs);
  rc = ramp_ReplyXferVA(token, handler, source_addr, nbytes, dest_offset, numargs, ap);
  va_end(ap);
  return rc;
}

/* =======================================================================================
 * SPMD layer and AMUDP drop-in: the C-side data and variadics of include/ramp_spmd.h,
 * and the AMUDP-only entry points of include/amudp.h / include/amudp_spmd.h that have
 * no ramp counterpart.  Every name here is listed in exports.txt (data objects too).
 * ===================================================================================== */
#include "ramp_spmd.h"
#include "amudp_spmd.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* setenv is POSIX: strict ISO C modes (-std=c99/c11 without a feature-test macro) leave
 * it undeclared in <stdlib.h>. */
#if !defined(__cplusplus) && !defined(_POSIX_C_SOURCE)
int setenv(const char *name, const char *value, int overwrite);
#endif

/* A const object at file scope needs `extern` in C++ to keep external linkage (C warns
 * about `extern` on a definition). */
#ifdef __cplusplus
#define RAMP_SHIM_CONST_EXTERN extern
#else
#define RAMP_SHIM_CONST_EXTERN
#endif

/* Knobs read (and, for ramp_ProcessLabel, written) by the Rust side through
 * `extern "C" { static ... }`: plain exported objects. */
RAMP_SHIM_EXPORT void (*ramp_SPMDkillmyprocess)(int) = _exit;
RAMP_SHIM_EXPORT int ramp_VerboseErrors = 0;
RAMP_SHIM_EXPORT int ramp_SilentMode = 0;
RAMP_SHIM_EXPORT const char *ramp_ProcessLabel = NULL;
RAMP_SHIM_EXPORT int ramp_PoliteSync = 0;

/* "*** FATAL ERROR: <msg>\n", or "*** FATAL ERROR (<label>): <msg>\n", written to stderr
 * in one piece when it fits; then stdout and stderr are flushed and abort() is called. */
RAMP_SHIM_EXPORT void ramp_FatalErr(const char *msg, ...)
{
  char buf[4096];
  const char *label = ramp_ProcessLabel;
  int head, len;
  va_list ap;

  fflush(stdout);
  if (label && *label) {
    head = snprintf(buf, sizeof buf, "*** FATAL ERROR (%.200s): ", label);
  } else {
    head = snprintf(buf, sizeof buf, "*** FATAL ERROR: ");
  }
  if (head < 0) head = 0;
  if (!msg) msg = "(null)";
  va_start(ap, msg);
  len = vsnprintf(buf + head, sizeof buf - (size_t)head, msg, ap);
  va_end(ap);
  if (len < 0) len = 0;
  if ((size_t)head + (size_t)len < sizeof buf - 1) {
    len += head;
    if (len == 0 || buf[len - 1] != '\n') {
      buf[len++] = '\n';
      buf[len] = '\0';
    }
    fputs(buf, stderr);
  } else {
    /* too long for the buffer: stream it */
    buf[head] = '\0';
    fputs(buf, stderr);
    va_start(ap, msg);
    vfprintf(stderr, msg, ap);
    va_end(ap);
    fputc('\n', stderr);
  }
  fflush(stderr);
  abort();
}

/* AMUDP_SetUDPInterface: ramp binds endpoints to RAMP_INTERFACE, read once at the first
 * AM_Init; so this only takes effect when called before that (documented in amudp.h). */
RAMP_SHIM_EXPORT int ramp_amudp_SetUDPInterface(uint32_t IPAddress)
{
  char addr[64];
  if (IPAddress == 0) return AM_OK; /* INADDR_ANY: keep RAMP_INTERFACE / ramp's default */
  snprintf(addr, sizeof addr, "%u.%u.%u.%u", (unsigned)((IPAddress >> 24) & 0xFFu),
           (unsigned)((IPAddress >> 16) & 0xFFu), (unsigned)((IPAddress >> 8) & 0xFFu),
           (unsigned)(IPAddress & 0xFFu));
  return setenv("RAMP_INTERFACE", addr, 1) == 0 ? AM_OK : AM_ERR_RESOURCE;
}

/* AMUDP_SPMDHandleControlTraffic: ramp services SPMD control traffic inside AM_Poll and
 * the SPMD calls; nothing is left for the caller to do. */
RAMP_SHIM_EXPORT int ramp_amudp_SPMDHandleControlTraffic(int *controlMessagesServiced)
{
  if (controlMessagesServiced) *controlMessagesServiced = 0;
  return AM_OK;
}

/* AMUDP_SPMDSetProc: the rank is assigned by ramp's launchers (ramp-run, the AMUDP-style
 * master, PMI); forcing it is not supported. */
RAMP_SHIM_EXPORT void ramp_amudp_SPMDSetProc(int rank)
{
  fprintf(stderr,
          "ramp: warning: AMUDP_SPMDSetProc(%d) is not supported (ranks are assigned by the "
          "launcher); ignored\n",
          rank);
}

/* The spawners, in AMUDP's order (the functions are implemented in Rust, src/ffi/spmd.rs;
 * 'S' is unsupported and returns 0). */
RAMP_SHIM_EXPORT RAMP_SHIM_CONST_EXTERN const ramp_spawnfn_desc_t ramp_Spawnfn_Desc[] = {
  {'S', "ssh", ramp_SPMDSshSpawn},
  {'L', "local fork/exec", ramp_SPMDLocalSpawn},
  {'C', "custom command", ramp_SPMDCustomSpawn},
  {'\0', NULL, NULL}
};

/* =======================================================================================
 * AMUDP's link names (include/amudp.h, include/amudp_spmd.h): real symbols, so that an
 * object compiled against AMUDP's own headers links with -lramp.  The knobs and the
 * shim's own functions are aliases (the same object, the same code); the Rust-side
 * functions get one-line forwarders.  Every name is listed in exports.txt and in
 * c-tests/gasnet/amudp_symbols.txt (checked with nm -D).
 * ===================================================================================== */
#define RAMP_SHIM_ALIAS(target) __attribute__((alias(#target), visibility("default")))
/* Data aliases are weak: a program that references two names of one object gets ONE copy
 * of it (the linker copies a strong symbol's weak aliases together; two strong names at
 * one address would become two copies, and writes through one name would not be seen
 * through the other). */
#define RAMP_SHIM_DATA_ALIAS(target) \
  __attribute__((weak, alias(#target), visibility("default")))

/* AMUDP 3.16 spells the knobs AMX_* (older releases AMUDP_*): both, one object each. */
extern int AMUDP_PoliteSync RAMP_SHIM_DATA_ALIAS(ramp_PoliteSync);
extern int AMUDP_VerboseErrors RAMP_SHIM_DATA_ALIAS(ramp_VerboseErrors);
extern int AMX_VerboseErrors RAMP_SHIM_DATA_ALIAS(ramp_VerboseErrors);
extern int AMUDP_SilentMode RAMP_SHIM_DATA_ALIAS(ramp_SilentMode);
extern int AMX_SilentMode RAMP_SHIM_DATA_ALIAS(ramp_SilentMode);
extern const char *AMUDP_ProcessLabel RAMP_SHIM_DATA_ALIAS(ramp_ProcessLabel);
extern const char *AMX_ProcessLabel RAMP_SHIM_DATA_ALIAS(ramp_ProcessLabel);
extern void (*AMUDP_SPMDkillmyprocess)(int) RAMP_SHIM_DATA_ALIAS(ramp_SPMDkillmyprocess);
extern const amudp_spawnfn_desc_t
  AMUDP_Spawnfn_Desc[sizeof ramp_Spawnfn_Desc / sizeof ramp_Spawnfn_Desc[0]]
  RAMP_SHIM_DATA_ALIAS(ramp_Spawnfn_Desc);

void AMUDP_FatalErr(const char *msg, ...) RAMP_SHIM_ALIAS(ramp_FatalErr);
void AMX_FatalErr(const char *msg, ...) RAMP_SHIM_ALIAS(ramp_FatalErr);
int AMUDP_SetUDPInterface(uint32_t IPAddress) RAMP_SHIM_ALIAS(ramp_amudp_SetUDPInterface);
int AMUDP_SPMDHandleControlTraffic(int *controlMessagesServiced)
  RAMP_SHIM_ALIAS(ramp_amudp_SPMDHandleControlTraffic);

int AMUDP_Request(ep_t ep, amudp_node_t dest, handler_t handler, int numargs, ...)
  RAMP_SHIM_ALIAS(ramp_Request);
int AMUDP_RequestI(ep_t ep, amudp_node_t dest, handler_t handler, void *source_addr,
                   size_t nbytes, int numargs, ...) RAMP_SHIM_ALIAS(ramp_RequestI);
int AMUDP_RequestXfer(ep_t ep, amudp_node_t dest, handler_t handler, void *source_addr,
                      size_t nbytes, uintptr_t dest_offset, int async, int numargs, ...)
  RAMP_SHIM_ALIAS(ramp_RequestXfer);
int AMUDP_Reply(void *token, handler_t handler, int numargs, ...) RAMP_SHIM_ALIAS(ramp_Reply);
int AMUDP_ReplyI(void *token, handler_t handler, void *source_addr, size_t nbytes,
                 int numargs, ...) RAMP_SHIM_ALIAS(ramp_ReplyI);
int AMUDP_ReplyXfer(void *token, handler_t handler, void *source_addr, size_t nbytes,
                    uintptr_t dest_offset, int numargs, ...) RAMP_SHIM_ALIAS(ramp_ReplyXfer);
int AMUDP_RequestVA(ep_t ep, amudp_node_t dest, handler_t handler, int numargs,
                    va_list argptr) RAMP_SHIM_ALIAS(ramp_RequestVA);
int AMUDP_RequestIVA(ep_t ep, amudp_node_t dest, handler_t handler, void *source_addr,
                     size_t nbytes, int numargs, va_list argptr) RAMP_SHIM_ALIAS(ramp_RequestIVA);
int AMUDP_RequestXferVA(ep_t ep, amudp_node_t dest, handler_t handler, void *source_addr,
                        size_t nbytes, uintptr_t dest_offset, int async, int numargs,
                        va_list argptr) RAMP_SHIM_ALIAS(ramp_RequestXferVA);
int AMUDP_ReplyVA(void *token, handler_t handler, int numargs, va_list argptr)
  RAMP_SHIM_ALIAS(ramp_ReplyVA);
int AMUDP_ReplyIVA(void *token, handler_t handler, void *source_addr, size_t nbytes,
                   int numargs, va_list argptr) RAMP_SHIM_ALIAS(ramp_ReplyIVA);
int AMUDP_ReplyXferVA(void *token, handler_t handler, void *source_addr, size_t nbytes,
                      uintptr_t dest_offset, int numargs, va_list argptr)
  RAMP_SHIM_ALIAS(ramp_ReplyXferVA);

/* Forwarders to the Rust-side functions. */
RAMP_SHIM_EXPORT int AM_Init_AMUDP_DEBUG(void) { return AM_Init(); }
RAMP_SHIM_EXPORT int AM_Init_AMUDP_NDEBUG(void) { return AM_Init(); }
RAMP_SHIM_EXPORT int AMUDP_SetHandlerCallbacks(ep_t ep, AMUDP_preHandlerCallback_t pre,
                                               AMUDP_postHandlerCallback_t post)
{
  return ramp_amudp_SetHandlerCallbacks(ep, pre, post);
}
RAMP_SHIM_EXPORT int AMUDP_SetTranslationTag(ep_t ea, int index, tag_t tag)
{
  return ramp_SetTranslationTag(ea, index, tag);
}
RAMP_SHIM_EXPORT int AMUDP_GetSourceId(void *token, int *srcid)
{
  return ramp_GetSourceId(token, srcid);
}
RAMP_SHIM_EXPORT int AMUDP_enEqual(en_t en1, en_t en2) { return ramp_enEqual(en1, en2); }
RAMP_SHIM_EXPORT int AMUDP_SPMDStartup_AMUDP_DEBUG(int *argc, char ***argv, int nproc,
                                                   int networkdepth, amudp_spawnfn_t spawnfn,
                                                   uint64_t *networkpid, eb_t *eb, ep_t *ep)
{
  return ramp_SPMDStartup(argc, argv, nproc, networkdepth, spawnfn, networkpid, eb, ep);
}
RAMP_SHIM_EXPORT int AMUDP_SPMDStartup_AMUDP_NDEBUG(int *argc, char ***argv, int nproc,
                                                    int networkdepth, amudp_spawnfn_t spawnfn,
                                                    uint64_t *networkpid, eb_t *eb, ep_t *ep)
{
  return ramp_SPMDStartup(argc, argv, nproc, networkdepth, spawnfn, networkpid, eb, ep);
}
RAMP_SHIM_EXPORT int AMUDP_SPMDExit(int exitcode) { return ramp_SPMDExit(exitcode); }
RAMP_SHIM_EXPORT int AMUDP_SPMDSetExitCallback(amudp_exitcallback_t fp)
{
  return ramp_SPMDSetExitCallback(fp);
}
RAMP_SHIM_EXPORT int AMUDP_SPMDIsWorker(char **argv) { return ramp_SPMDIsWorker(argv); }
RAMP_SHIM_EXPORT int AMUDP_SPMDNumProcs(void) { return ramp_SPMDNumProcs(); }
RAMP_SHIM_EXPORT int AMUDP_SPMDMyProc(void) { return ramp_SPMDMyProc(); }
RAMP_SHIM_EXPORT int AMUDP_SPMDBarrier(void) { return ramp_SPMDBarrier(); }
RAMP_SHIM_EXPORT int AMUDP_SPMDAllGather(void *source, void *dest, size_t len)
{
  return ramp_SPMDAllGather(source, dest, len);
}
RAMP_SHIM_EXPORT const char *AMUDP_SPMDgetenvMaster(const char *keyname)
{
  return ramp_SPMDgetenvMaster(keyname);
}
/* The spawners must be the very functions of ramp_Spawnfn_Desc (ramp_SPMDStartup
 * recognises them by address): aliases would be, but these live in Rust, so the
 * forwarders are recognised by address too (src/ffi/spmd.rs). */
RAMP_SHIM_EXPORT int AMUDP_SPMDLocalSpawn(int nproc, int argc, char **argv, char **extra_env)
{
  return ramp_SPMDLocalSpawn(nproc, argc, argv, extra_env);
}
RAMP_SHIM_EXPORT int AMUDP_SPMDSshSpawn(int nproc, int argc, char **argv, char **extra_env)
{
  return ramp_SPMDSshSpawn(nproc, argc, argv, extra_env);
}
RAMP_SHIM_EXPORT int AMUDP_SPMDCustomSpawn(int nproc, int argc, char **argv, char **extra_env)
{
  return ramp_SPMDCustomSpawn(nproc, argc, argv, extra_env);
}

/* Which of the library's spawners `f` is, under either name: 'L', 'S', 'C', or 0 (the
 * program's own).  Internal: for ramp_SPMDStartup (src/ffi/spmd.rs), not exported. */
char ramp_internal_spawner_letter(ramp_spawnfn_t f);
char ramp_internal_spawner_letter(ramp_spawnfn_t f)
{
  if (f == ramp_SPMDLocalSpawn || f == AMUDP_SPMDLocalSpawn) return 'L';
  if (f == ramp_SPMDSshSpawn || f == AMUDP_SPMDSshSpawn) return 'S';
  if (f == ramp_SPMDCustomSpawn || f == AMUDP_SPMDCustomSpawn) return 'C';
  return 0;
}

/* ---- statistics in AMUDP's layout: amudp_stats_t is the first part of ramp_stats_t -- */
#ifdef __cplusplus
#define RAMP_SHIM_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define RAMP_SHIM_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif
RAMP_SHIM_STATIC_ASSERT(sizeof(amudp_stats_t) == 40 * sizeof(uint64_t), "amudp_stats_t");
RAMP_SHIM_STATIC_ASSERT(offsetof(ramp_stats_t, RequestLatencySamples) == sizeof(amudp_stats_t),
                        "amudp_stats_t is ramp_stats_t's first part");
RAMP_SHIM_STATIC_ASSERT(offsetof(ramp_stats_t, TotalBytesSent) ==
                        offsetof(amudp_stats_t, TotalBytesSent), "TotalBytesSent");
RAMP_SHIM_STATIC_ASSERT(offsetof(ramp_stats_t, RequestMinLatency) ==
                        offsetof(amudp_stats_t, RequestMinLatency), "RequestMinLatency");

RAMP_SHIM_EXPORT RAMP_SHIM_CONST_EXTERN const amudp_stats_t AMUDP_initial_stats = {
  {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0},
  0, 0, 0, UINT64_MAX, 0, 0,
  {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, 0
};

/* ramp_stats_t with `s` as its AMUDP part and ramp's part as ramp_initial_stats. */
static ramp_stats_t ramp_shim_widen(const amudp_stats_t *s)
{
  ramp_stats_t r = ramp_initial_stats;
  memcpy(&r, s, sizeof *s);
  return r;
}

RAMP_SHIM_EXPORT int AMUDP_GetEndpointStatistics(ep_t ep, amudp_stats_t *stats)
{
  ramp_stats_t r;
  int rc;
  if (!stats) return AM_ERR_BAD_ARG;
  rc = ramp_GetEndpointStatistics(ep, &r);
  if (rc == AM_OK) memcpy(stats, &r, sizeof *stats);
  return rc;
}
RAMP_SHIM_EXPORT int AMUDP_ResetEndpointStatistics(ep_t ep)
{
  return ramp_ResetEndpointStatistics(ep);
}
RAMP_SHIM_EXPORT int AMUDP_AggregateStatistics(amudp_stats_t *runningsum,
                                               amudp_stats_t *newvalues)
{
  ramp_stats_t sum, add;
  int rc;
  if (!runningsum || !newvalues) return AM_ERR_BAD_ARG;
  sum = ramp_shim_widen(runningsum);
  add = ramp_shim_widen(newvalues);
  rc = ramp_AggregateStatistics(&sum, &add);
  if (rc == AM_OK) memcpy(runningsum, &sum, sizeof *runningsum);
  return rc;
}
RAMP_SHIM_EXPORT const char *AMUDP_DumpStatistics(void *fp, amudp_stats_t *stats,
                                                  int globalAnalysis)
{
  ramp_stats_t r;
  if (!stats) return NULL;
  r = ramp_shim_widen(stats);
  return ramp_DumpStatistics(fp, &r, globalAnalysis);
}
