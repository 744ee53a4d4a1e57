/*
 * amudp.h -- drop-in replacement for GASNet's AMUDP header, on top of ramp.
 *
 * Programs written against AMUDP (amudp.h: the AM-2 API plus the AMUDP_* and AMX_*
 * extensions) compile unchanged against ramp's include/ directory and link with
 * -lramp only.  Link level: every AMUDP_* / AMX_* function and object that AMUDP
 * 3.16's amudp.h and amudp_spmd.h declare (and GASNet's udp-conduit links against),
 * and AMUDP's link names AM_Init_AMUDP_{DEBUG,NDEBUG} and
 * AMUDP_SPMDStartup_AMUDP_{DEBUG,NDEBUG}, are real symbols of libramp.so (the list:
 * c-tests/gasnet/amudp_symbols.txt, checked with nm -D), so an object compiled against
 * AMUDP's own headers links with -lramp as long as it does not depend on the two
 * layouts below.  SPMD start-up (AMUDP_SPMD*, AMX_SPMD*) is in <amudp_spmd.h>,
 * AMUDP's limits in <amudp_const.h>.
 *
 * Differences from AMUDP (see the spec, "ramp's choices where AMUDP leaves room"):
 *  - en_t is ramp's opaque 32-byte name (am.h), not AMUDP's 16-byte struct sockaddr_in:
 *    it has no sin_family/sin_port/sin_addr members.  Recompile against ramp's headers
 *    every object that declares an en_t, or passes or receives one
 *    (AM_AllocateEndpoint, AM_Map, AM_MapAny, AM_GetTranslationName,
 *    AM_GetSourceEndpoint, AMUDP_enEqual): an object built against AMUDP's headers
 *    would pass 16 bytes where ramp reads 32.  Code that reads an en_t's sockaddr_in
 *    fields does not compile against ramp (GASNet-EX's udp-conduit reads sin_addr for
 *    its node map unless GASNET_USE_GETHOSTID=1; GASNet 1.x's does not).  Compare
 *    names only with AMX_enEqual/AMUDP_enEqual; ramp_enToString prints one.
 *  - amudp_stats_t has AMUDP 3.16's layout exactly (40 uint64_t, the same names and
 *    order; c-tests/gasnet/stats.c checks offsets); its latencies are nanoseconds,
 *    not CPU ticks.  ramp's own counters are in ramp_stats_t (ramp_GetEndpointStatistics).
 *  - Build mode: AMUDP insists that exactly one of AMUDP_DEBUG / AMUDP_NDEBUG ends up
 *    defined (derived from GASNET_DEBUG/AMX_DEBUG or GASNET_NDEBUG/AMX_NDEBUG).  These
 *    headers accept either mode, or none (then AMUDP_NDEBUG), and both modes' link
 *    names are the one ramp library (AM_Init, ramp_SPMDStartup).  Defining both modes
 *    is still an #error, and so is defining AMUDP_COEXIST_WITH_AM (ramp is one
 *    library: the AM-2 names cannot be renamed).  AMUDP's "AMUDP_DEBUG with
 *    optimisation" #error is not kept: ramp behaves the same in both modes.
 *  - AM_MaxMedium() is 65000, AM_MaxLong() is 1 MiB (AMUDP: 65000 on Linux).
 *  - AMUDP_SetUDPInterface sets RAMP_INTERFACE, which ramp reads once, at the first
 *    AM_Init (AMX_SPMDStartup calls AM_Init): call it before that.
 *  - AMUDP_SPMDHandleControlTraffic has nothing to do (ramp services its control
 *    traffic itself) and returns AM_OK.
 *  - The PLATFORM_* macros of amx_portable_platform.h are not provided.
 */
#ifndef RAMP_AMUDP_H
#define RAMP_AMUDP_H

#ifdef AMUDP_COEXIST_WITH_AM
#error "AMUDP_COEXIST_WITH_AM is not supported by ramp: libramp.so exports the AM-2 names (AM_Init, AM_Poll, ...) themselves, so they cannot be renamed to AMUDP_* for linking with a second AM library"
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <netinet/in.h> /* AMUDP includes it (for sockaddr_in); programs may rely on it */

#include "amudp_const.h" /* version, build mode, limits (AMUDP_MAX_*), AM_* codes */
#include "am.h"
#include "ramp.h"
#include "ramp_spmd.h"

#ifdef __cplusplus
  #define AMUDP_BEGIN_EXTERNC extern "C" {
  #define AMUDP_END_EXTERNC }
  #define AMUDP_EXTERNC extern "C"
#else
  #define AMUDP_BEGIN_EXTERNC
  #define AMUDP_END_EXTERNC
  #define AMUDP_EXTERNC extern
#endif

/* Always 0: every handler index is valid (handler_t is 8 bits). */
#define AMUDP_BADHANDLERVAL(h) (0)

/* ------------------------------------------------------------------------------------
 * Types (tag_t, handler_t, op_t, en_t, eb_t, ep_t come from am.h)
 * ---------------------------------------------------------------------------------- */

#ifdef __cplusplus
extern "C" {
#endif

/* Translation-table index ("reply_endpoint") of the AMUDP_Request* functions. */
typedef uint32_t amudp_node_t;

/* Latency counters of the statistics (ramp: nanoseconds). */
#ifndef _AMX_TICK_T
#define _AMX_TICK_T
typedef uint64_t amx_tick_t;
#endif

/* Message category: amudp_Short, amudp_Medium, amudp_Long (= ramp_Short ...). */
typedef ramp_category_t amudp_category_t;
#define amudp_Short         ramp_Short
#define amudp_Medium        ramp_Medium
#define amudp_Long          ramp_Long
#define amudp_NumCategories ramp_NumCategories

/* Bundle event masks: AM_NOEVENTS, AM_NOTEMPTY (am.h); AM_CANSEND is not implemented. */
typedef enum {
  amudp_NoEvents = AM_NOEVENTS,
  amudp_NotEmpty = AM_NOTEMPTY,
  AM_NUMEVENTMASKS = 2
} amudp_eventmask_t;

/* Bundle modes: AM_SEQ, AM_PAR (am.h). */
typedef enum {
  amudp_Seq = AM_SEQ,
  amudp_Par = AM_PAR,
  AM_NUM_BUNDLE_MODES = 2
} amudp_bundle_mode_t;

/* Per-endpoint statistics: AMUDP 3.16's struct, field for field (40 uint64_t, 320
 * bytes); the latencies are nanoseconds, not CPU ticks.  It is the first part of
 * ramp_stats_t (ramp_GetEndpointStatistics also gives ramp's own counters). */
typedef struct {
  uint64_t RequestsSent[amudp_NumCategories];
  uint64_t RepliesSent[amudp_NumCategories];
  uint64_t RequestsRetransmitted[amudp_NumCategories];
  uint64_t RepliesRetransmitted[amudp_NumCategories];
  uint64_t RepliesSquashed[amudp_NumCategories];
  uint64_t RequestsReceived[amudp_NumCategories];   /* includes retransmits */
  uint64_t RepliesReceived[amudp_NumCategories];    /* includes retransmits */
  uint64_t ReturnedMessages;
  uint64_t OutOfOrderRequests;
  uint64_t OutOfOrderReplies;
  amx_tick_t RequestMinLatency;  /* nanoseconds, request sent -> reply received */
  amx_tick_t RequestMaxLatency;
  amx_tick_t RequestSumLatency;
  uint64_t RequestDataBytesSent[amudp_NumCategories];  /* payload only */
  uint64_t ReplyDataBytesSent[amudp_NumCategories];
  uint64_t RequestTotalBytesSent[amudp_NumCategories]; /* payload + headers */
  uint64_t ReplyTotalBytesSent[amudp_NumCategories];
  uint64_t TotalBytesSent;                             /* bytes, all packets */
} amudp_stats_t;

/* Generic, unprototyped handler pointer (the type AM_SetHandler casts to). */
typedef am_handler_fn_t amudp_handler_fn_t;

/* Handler callbacks of AMUDP_SetHandlerCallbacks: pre runs before each handler of the
 * endpoint (buf NULL and nbytes 0 for a short message; args points at numargs values),
 * post after it returns; handler 0 for a returned message runs without them.  They may
 * not call ramp. */
typedef void (*AMUDP_preHandlerCallback_t)(amudp_category_t cat, int isReq, int handlerId,
                                           void *token, void *buf, size_t nbytes,
                                           int numargs, uint32_t *args);
typedef void (*AMUDP_postHandlerCallback_t)(amudp_category_t cat, int isReq);

/* ------------------------------------------------------------------------------------
 * AMUDP-only entry points (C functions of libramp.so; use the AMUDP_* names below)
 * ---------------------------------------------------------------------------------- */

/* Sets RAMP_INTERFACE to IPAddress (IPv4, host byte order) for endpoints made later;
 * 0 (INADDR_ANY) leaves ramp's choice.  ramp reads it at the first AM_Init only:
 * call it before AM_Init / AMX_SPMDStartup.  Returns AM_OK, AM_ERR_RESOURCE if the
 * environment cannot be changed. */
int ramp_amudp_SetUDPInterface(uint32_t IPAddress);
/* Installs the endpoint's handler callbacks (either may be NULL; both NULL removes
 * them), as AMUDP does; AM_ERR_BAD_ARG when ep is not an endpoint. */
int ramp_amudp_SetHandlerCallbacks(ep_t ep, AMUDP_preHandlerCallback_t preHandlerCallback,
                                   AMUDP_postHandlerCallback_t postHandlerCallback);
/* Nothing to do in ramp (control traffic is serviced by AM_Poll and the SPMD calls):
 * stores 0 in *controlMessagesServiced (if non-NULL) and returns AM_OK. */
int ramp_amudp_SPMDHandleControlTraffic(int *controlMessagesServiced);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* ------------------------------------------------------------------------------------
 * AMUDP's entry points: real symbols of libramp.so under AMUDP 3.16's link names (an
 * object compiled against AMUDP's own headers links with -lramp); each is the ramp_*
 * function or object of the same meaning (the same object for the knobs).
 * ---------------------------------------------------------------------------------- */

#ifdef __cplusplus
extern "C" {
#endif

/* AM_Init under AMUDP's link names (AMUDP's amudp.h defines AM_Init as one of them). */
int AM_Init_AMUDP_DEBUG(void);
int AM_Init_AMUDP_NDEBUG(void);

/* Tuning knobs and diagnostics: the objects ramp_PoliteSync, ramp_VerboseErrors,
 * ramp_SilentMode, ramp_ProcessLabel themselves (also as AMX_*). */
extern int AMUDP_PoliteSync;
extern int AMUDP_VerboseErrors;
extern int AMX_VerboseErrors;
extern int AMUDP_SilentMode;
extern int AMX_SilentMode;
extern const char *AMUDP_ProcessLabel;
extern const char *AMX_ProcessLabel;
/* ramp_FatalErr, under both names. */
#if defined(__GNUC__)
__attribute__((__format__(__printf__, 1, 2), __noreturn__))
#endif
void AMUDP_FatalErr(const char *msg, ...);
#if defined(__GNUC__)
__attribute__((__format__(__printf__, 1, 2), __noreturn__))
#endif
void AMX_FatalErr(const char *msg, ...);
int AMUDP_SetUDPInterface(uint32_t IPAddress);
int AMUDP_SetHandlerCallbacks(ep_t ep, AMUDP_preHandlerCallback_t preHandlerCallback,
                              AMUDP_postHandlerCallback_t postHandlerCallback);
int AMUDP_SPMDHandleControlTraffic(int *controlMessagesServiced);

/* Statistics, in amudp_stats_t (AMUDP's layout).  AMUDP_DumpStatistics formats like
 * ramp_DumpStatistics (ramp's own counters shown as 0) into a static buffer reused by
 * the next call. */
int AMUDP_GetEndpointStatistics(ep_t ep, amudp_stats_t *stats);
int AMUDP_ResetEndpointStatistics(ep_t ep);
int AMUDP_AggregateStatistics(amudp_stats_t *runningsum, amudp_stats_t *newvalues);
const char *AMUDP_DumpStatistics(void *fp, amudp_stats_t *stats, int globalAnalysis);
/* Identity for AMUDP_AggregateStatistics: all 0 except RequestMinLatency = UINT64_MAX. */
extern const amudp_stats_t AMUDP_initial_stats;

/* Translation tags and message interrogation (ramp_SetTranslationTag, ...) */
int AMUDP_SetTranslationTag(ep_t ea, int index, tag_t tag);
int AMUDP_GetSourceId(void *token, int *srcid);
int AMUDP_enEqual(en_t en1, en_t en2);

/* Requests and replies: ramp_Request ... ramp_ReplyXferVA (what am.h's AM-2 macro
 * families call). */
int AMUDP_Request(ep_t request_endpoint, amudp_node_t reply_endpoint, handler_t handler,
                  int numargs, ...);
int AMUDP_RequestI(ep_t request_endpoint, amudp_node_t reply_endpoint, handler_t handler,
                   void *source_addr, size_t nbytes, int numargs, ...);
int AMUDP_RequestXfer(ep_t request_endpoint, amudp_node_t reply_endpoint, handler_t handler,
                      void *source_addr, size_t nbytes, uintptr_t dest_offset, int async,
                      int numargs, ...);
int AMUDP_Reply(void *token, handler_t handler, int numargs, ...);
int AMUDP_ReplyI(void *token, handler_t handler, void *source_addr, size_t nbytes,
                 int numargs, ...);
int AMUDP_ReplyXfer(void *token, handler_t handler, void *source_addr, size_t nbytes,
                    uintptr_t dest_offset, int numargs, ...);
int AMUDP_RequestVA(ep_t request_endpoint, amudp_node_t reply_endpoint, handler_t handler,
                    int numargs, va_list argptr);
int AMUDP_RequestIVA(ep_t request_endpoint, amudp_node_t reply_endpoint, handler_t handler,
                     void *source_addr, size_t nbytes, int numargs, va_list argptr);
int AMUDP_RequestXferVA(ep_t request_endpoint, amudp_node_t reply_endpoint,
                        handler_t handler, void *source_addr, size_t nbytes,
                        uintptr_t dest_offset, int async, int numargs, va_list argptr);
int AMUDP_ReplyVA(void *token, handler_t handler, int numargs, va_list argptr);
int AMUDP_ReplyIVA(void *token, handler_t handler, void *source_addr, size_t nbytes,
                   int numargs, va_list argptr);
int AMUDP_ReplyXferVA(void *token, handler_t handler, void *source_addr, size_t nbytes,
                      uintptr_t dest_offset, int numargs, va_list argptr);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* ramp's token interrogation, under an AMUDP-style name (no AMUDP counterpart). */
#define AMUDP_GetTokenInfo      ramp_GetTokenInfo

/* ------------------------------------------------------------------------------------
 * AMX names (the portable spelling used by GASNet's AMX test and application code)
 * ---------------------------------------------------------------------------------- */

#define AMX_SetTranslationTag     AMUDP_SetTranslationTag
#define AMX_GetEndpointStatistics AMUDP_GetEndpointStatistics
#define AMX_ResetEndpointStatistics AMUDP_ResetEndpointStatistics
#define AMX_DumpStatistics        AMUDP_DumpStatistics
#define AMX_AggregateStatistics   AMUDP_AggregateStatistics
#define AMX_initial_stats         AMUDP_initial_stats
#define amx_stats_t               amudp_stats_t
#define amx_handler_fn_t          amudp_handler_fn_t
#define AMX_GetSourceId           AMUDP_GetSourceId
#define AMX_enEqual               AMUDP_enEqual
#define AMX_GetTokenInfo          AMUDP_GetTokenInfo
#define amx_category_t            amudp_category_t
#define amx_Short                 amudp_Short
#define amx_Medium                amudp_Medium
#define amx_Long                  amudp_Long

#endif /* RAMP_AMUDP_H */
