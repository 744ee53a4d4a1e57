/*
 * amudp_const.h -- AMUDP's namespace-clean constants header, for ramp.
 *
 * GASNet's udp-conduit includes this header from its public gasnet_core.h (without
 * amudp.h) and checks at compile time:
 *     AMUDP_MAX_SPMDPROCS >= GASNET_MAXNODES (= AMUDP_MAX_NUMTRANSLATIONS),
 *     AMUDP_MAX_NUMHANDLERS >= 256,  AMUDP_MAX_SEGLENGTH == (uintptr_t)-1,
 *     AM_ERR_NOT_INIT, AM_ERR_RESOURCE, AM_ERR_BAD_ARG == GASNet's 1, 3, 2.
 * So every limit here is an integer constant expression (usable in #if, static asserts
 * and array sizes), with AMUDP's name and AMUDP's value, except where ramp's real limit
 * differs (marked "ramp:" below).  <amudp.h> includes this header; either may come
 * first, and <am.h> may come before or after it: the AM_* macros defined here are
 * token-for-token those of <am.h> (identical redefinitions).
 *
 * Differences from AMUDP's amudp_const.h:
 *  - AMUDP_MAX_LONG is 1048576 (ramp's AM_MaxLong()); AMUDP's is 65000 on Linux.
 *    AMUDP_MAX_MEDIUM is 65000 as in AMUDP.
 *  - Build mode: neither AMUDP_DEBUG nor AMUDP_NDEBUG derivable -> AMUDP_NDEBUG
 *    (AMUDP: #error).  AMUDP's "AMUDP_DEBUG with optimisation" #error is not kept.
 *  - amx_portable_platform.h is not included (its PLATFORM_* macros are not provided).
 *  - The event-mask and bundle-mode enums (AM_NOEVENTS ..., AM_SEQ ...) are in <am.h> /
 *    <amudp.h>; AM_GetNumHandlers, AM_SetNumHandlers, AM_MaxNumTranslations in <am.h>.
 */
#ifndef RAMP_AMUDP_CONST_H
#define RAMP_AMUDP_CONST_H

#include <stdint.h>

#ifndef AMX_STRINGIFY
#define _AMX_STRINGIFY_HELPER(x) #x
#define AMX_STRINGIFY(x) _AMX_STRINGIFY_HELPER(x)
#endif
#ifndef AMX_CONCAT
#define _AMX_CONCAT_HELPER(a, b) a ## b
#define AMX_CONCAT(a, b) _AMX_CONCAT_HELPER(a, b)
#endif

#ifndef AMUDP
#define AMUDP 1
#endif

/* The AMUDP release whose API ramp provides. */
#define AMUDP_LIBRARY_VERSION_MAJOR 3
#define AMUDP_LIBRARY_VERSION_MINOR 16
/* MAJOR.MINOR as tokens (only meaningful stringified) */
#define AMUDP_LIBRARY_VERSION AMUDP_LIBRARY_VERSION_MAJOR.AMUDP_LIBRARY_VERSION_MINOR
#define AMUDP_LIBRARY_VERSION_STR AMX_STRINGIFY(AMUDP_LIBRARY_VERSION)

/* Build mode: AMUDP_DEBUG or AMUDP_NDEBUG, from GASNET_/AMX_ (N)DEBUG when not given;
 * neither given anywhere: AMUDP_NDEBUG (ramp's choice; AMUDP gives #error). */
#if !defined(AMUDP_DEBUG) && !defined(AMUDP_NDEBUG)
  #if defined(GASNET_DEBUG) || defined(AMX_DEBUG)
    #define AMUDP_DEBUG 1
  #else
    #define AMUDP_NDEBUG 1
  #endif
#endif
#if defined(AMUDP_DEBUG) && !defined(AMUDP_NDEBUG)
  #undef AMUDP_DEBUG
  #define AMUDP_DEBUG 1
#elif !defined(AMUDP_DEBUG) && defined(AMUDP_NDEBUG)
  #undef AMUDP_NDEBUG
  #define AMUDP_NDEBUG 1
#else
  #error "bad definitions of AMUDP_DEBUG and AMUDP_NDEBUG: define at most one of them"
#endif

#undef AMX_DEBUG
#undef AMX_NDEBUG
#ifdef AMUDP_DEBUG
  #define AMX_DEBUG AMUDP_DEBUG
  #define AMUDP_DEBUG_CONFIG _DEBUG
#endif
#ifdef AMUDP_NDEBUG
  #define AMX_NDEBUG AMUDP_NDEBUG
  #define AMUDP_DEBUG_CONFIG _NDEBUG
#endif
#if (defined(AMX_DEBUG_VERBOSE) && (AMX_DEBUG_VERBOSE + 0)) || \
    (defined(AMUDP_DEBUG_VERBOSE) && (AMUDP_DEBUG_VERBOSE + 0)) || \
    (defined(GASNET_DEBUG_VERBOSE) && (GASNET_DEBUG_VERBOSE + 0))
  #undef AMX_DEBUG_VERBOSE
  #define AMX_DEBUG_VERBOSE 1
#endif

/* ------------------------------------------------------------------------------------
 * Limits (integer constant expressions)
 * ---------------------------------------------------------------------------------- */

#define AMUDP_MAX_SHORT            16        /* max handler arguments */
#define AMUDP_MAX_MEDIUM           65000     /* max medium payload, bytes */
#define AMUDP_MAX_LONG             1048576   /* ramp: max long payload, bytes (AMUDP 65000) */
#define AMUDP_MAX_NUMHANDLERS      256       /* handler table size */
#define AMUDP_INIT_NUMTRANSLATIONS 256       /* initial translation table size */
#define AMUDP_MAX_NUMTRANSLATIONS  (1U<<20)  /* max translation table size */
#define AMUDP_MAX_SEGLENGTH        ((uintptr_t)-1) /* max segment length / dest_offset */
#define AMUDP_MAX_BUNDLES          255   /* AMUDP's limit; ramp allows at least as many */
#define AMUDP_MAX_NETWORKDEPTH     1024  /* max credits per peer (AM_SetExpectedResources) */
#define AMUDP_MAX_RECVDEPTH        65534 /* AMUDP's limit; ramp allows at least as many */
#define AMUDP_MAX_SPMDPROCS        AMUDP_MAX_NUMTRANSLATIONS /* max SPMD ranks */
#ifndef AMUDP_COLLECT_STATS
#define AMUDP_COLLECT_STATS         1
#endif
#ifndef AMUDP_COLLECT_LATENCY_STATS
#define AMUDP_COLLECT_LATENCY_STATS 1
#endif

/* ------------------------------------------------------------------------------------
 * User-visible constants (the same tokens as <am.h>)
 * ---------------------------------------------------------------------------------- */

#define AM_NONE  0
#define AM_ALL   1

#define AM_OK            0
#define AM_ERR_NOT_INIT  1
#define AM_ERR_BAD_ARG   2
#define AM_ERR_RESOURCE  3
#define AM_ERR_NOT_SENT  4
#define AM_ERR_IN_USE    5

#define AM_REQUEST_M       1
#define AM_REQUEST_IM      2
#define AM_REQUEST_XFER_M  3
#define AM_REPLY_M         4
#define AM_REPLY_IM        5
#define AM_REPLY_XFER_M    6

#define AM_MaxShort()       16
#define AM_MaxMedium()      65000
#define AM_MaxLong()        1048576
#define AM_MaxNumHandlers() 256

#endif /* RAMP_AMUDP_CONST_H */
