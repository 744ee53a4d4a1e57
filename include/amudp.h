/*
 * amudp.h -- drop-in replacement for GASNet's AMUDP header, on top of ramp.
 *
 * Programs written against AMUDP (amudp.h: the AM-2 API plus the AMUDP_* and AMX_*
 * extensions) compile unchanged against ramp's include/ directory and link with
 * -lramp only.  Everything here is a macro or typedef over <am.h>, <ramp.h> and
 * <ramp_spmd.h>; the few AMUDP-only entry points without a ramp counterpart are small
 * C functions of libramp.so named ramp_amudp_* (declared at the end).  SPMD start-up
 * (AMUDP_SPMD*, AMX_SPMD*) is in <amudp_spmd.h>.
 *
 * Differences from AMUDP (see the spec, "ramp's choices where AMUDP leaves room"):
 *  - Build mode: AMUDP insists that exactly one of AMUDP_DEBUG / AMUDP_NDEBUG ends up
 *    defined (derived from GASNET_DEBUG/AMX_DEBUG or GASNET_NDEBUG/AMX_NDEBUG).  This
 *    header accepts either mode, or none (then AMUDP_NDEBUG), and maps both to the one
 *    ramp library: AM_Init_AMUDP_{DEBUG,NDEBUG} and
 *    AMUDP_SPMDStartup_AMUDP_{DEBUG,NDEBUG} are macros for AM_Init and
 *    ramp_SPMDStartup.  Defining both modes is still an #error, and so is defining
 *    AMUDP_COEXIST_WITH_AM (ramp is one library: the AM-2 names cannot be renamed).
 *    AMUDP's "AMUDP_DEBUG with optimisation" #error is not kept: ramp behaves the same
 *    in both modes.
 *  - en_t is ramp's opaque 32-byte name, not a struct sockaddr_in: compare names only
 *    with AMX_enEqual/AMUDP_enEqual (as AMUDP programs already must).
 *  - AM_MaxMedium() is 65000, AM_MaxLong() is 1 MiB (AMUDP: 65000 on Linux).
 *  - amudp_stats_t is ramp_stats_t: AMUDP's fields in AMUDP's order, followed by
 *    ramp's own counters; the latencies are nanoseconds, not CPU ticks.
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

/* Link names: both build modes call the one ramp entry point. */
#define AM_Init_AMUDP_DEBUG  AM_Init
#define AM_Init_AMUDP_NDEBUG AM_Init

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

/* Per-endpoint statistics (AMUDP's fields first, in AMUDP's order; then ramp's). */
typedef ramp_stats_t amudp_stats_t;

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
 * AMUDP names -> ramp names
 * ---------------------------------------------------------------------------------- */

/* Tuning knobs and diagnostics (real, assignable objects) */
#define AMUDP_PoliteSync     ramp_PoliteSync
#define AMUDP_VerboseErrors  ramp_VerboseErrors
#define AMUDP_SilentMode     ramp_SilentMode
#define AMUDP_ProcessLabel   ramp_ProcessLabel
#define AMUDP_FatalErr       ramp_FatalErr
#define AMUDP_SetUDPInterface         ramp_amudp_SetUDPInterface
#define AMUDP_SetHandlerCallbacks     ramp_amudp_SetHandlerCallbacks
#define AMUDP_SPMDHandleControlTraffic ramp_amudp_SPMDHandleControlTraffic

/* Statistics */
#define AMUDP_GetEndpointStatistics   ramp_GetEndpointStatistics
#define AMUDP_ResetEndpointStatistics ramp_ResetEndpointStatistics
#define AMUDP_AggregateStatistics     ramp_AggregateStatistics
#define AMUDP_DumpStatistics          ramp_DumpStatistics
#define AMUDP_initial_stats           ramp_initial_stats

/* Translation tags and message interrogation */
#define AMUDP_SetTranslationTag ramp_SetTranslationTag
#define AMUDP_GetSourceId       ramp_GetSourceId
#define AMUDP_GetTokenInfo      ramp_GetTokenInfo
#define AMUDP_enEqual           ramp_enEqual

/* Requests and replies (the AM-2 macro families of am.h call the ramp_ names) */
#define AMUDP_Request     ramp_Request
#define AMUDP_RequestI    ramp_RequestI
#define AMUDP_RequestXfer ramp_RequestXfer
#define AMUDP_Reply       ramp_Reply
#define AMUDP_ReplyI      ramp_ReplyI
#define AMUDP_ReplyXfer   ramp_ReplyXfer
#define AMUDP_RequestVA     ramp_RequestVA
#define AMUDP_RequestIVA    ramp_RequestIVA
#define AMUDP_RequestXferVA ramp_RequestXferVA
#define AMUDP_ReplyVA       ramp_ReplyVA
#define AMUDP_ReplyIVA      ramp_ReplyIVA
#define AMUDP_ReplyXferVA   ramp_ReplyXferVA

/* ------------------------------------------------------------------------------------
 * AMX names (the portable spelling used by GASNet's AMX test and application code)
 * ---------------------------------------------------------------------------------- */

#define AMX_VerboseErrors         AMUDP_VerboseErrors
#define AMX_SilentMode            AMUDP_SilentMode
#define AMX_ProcessLabel          AMUDP_ProcessLabel
#define AMX_FatalErr              AMUDP_FatalErr
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
