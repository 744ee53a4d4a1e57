/*
 * const_asserts.c -- GASNet udp-conduit's compile-time checks against <amudp_const.h>.
 *
 * GASNet's public gasnet_core.h includes amudp_const.h alone; gasnet_core_fwd.h sets
 * GASNET_MAXNODES to AMUDP_MAX_NUMTRANSLATIONS and GASNet's error codes to AMUDP's;
 * gasnet_core.c's gasnetc_check_config() static-asserts the lines below.  Compiled
 * (never run) by c-tests/gasnet/run.sh with -Wall -Wextra -Werror -pedantic as C11 and
 * C++, with ORDER selecting which headers come first:
 *   ORDER=0  amudp_const.h alone (what gasnet_core.h sees)
 *   ORDER=1  amudp_const.h, then amudp_spmd.h (gasnet_core.c's order)
 *   ORDER=2  am.h, then amudp_const.h, then amudp.h
 */
#ifndef ORDER
#define ORDER 0
#endif
#if ORDER == 2
#include "am.h"
#endif
#include "amudp_const.h"
#if ORDER >= 1
#include "amudp_spmd.h"
#endif

#ifdef __cplusplus
#define CA_STATIC_ASSERT(cond) static_assert(cond, #cond)
#else
#define CA_STATIC_ASSERT(cond) _Static_assert(cond, #cond)
#endif

/* gasnet_core_fwd.h */
#define GASNET_MAXNODES AMUDP_MAX_NUMTRANSLATIONS
#define GASNET_ERR_NOT_INIT 1
#define GASNET_ERR_RESOURCE 3
#define GASNET_ERR_BAD_ARG  2
#define GASNET_CORE_VERSION AMUDP_LIBRARY_VERSION
#define GASNET_CORE_VERSION_STR AMX_STRINGIFY(GASNET_CORE_VERSION)

/* gasnet_core.c: gasnetc_check_config() */
CA_STATIC_ASSERT(GASNET_MAXNODES <= AMUDP_MAX_SPMDPROCS);
CA_STATIC_ASSERT(AMUDP_MAX_NUMHANDLERS >= 256);
CA_STATIC_ASSERT(AMUDP_MAX_SEGLENGTH == (uintptr_t)-1);
CA_STATIC_ASSERT(GASNET_ERR_NOT_INIT == AM_ERR_NOT_INIT);
CA_STATIC_ASSERT(GASNET_ERR_RESOURCE == AM_ERR_RESOURCE);
CA_STATIC_ASSERT(GASNET_ERR_BAD_ARG == AM_ERR_BAD_ARG);

/* preprocessor arithmetic, as configure-time checks use it */
#if AMUDP_MAX_SHORT < 16 || AMUDP_MAX_MEDIUM < 512 || AMUDP_MAX_LONG < AMUDP_MAX_MEDIUM
#error "AMUDP_MAX_SHORT / MEDIUM / LONG"
#endif
#if AMUDP_MAX_NUMHANDLERS != 256 || AMUDP_MAX_NETWORKDEPTH != 1024
#error "AMUDP_MAX_NUMHANDLERS / AMUDP_MAX_NETWORKDEPTH"
#endif
#if AMUDP_LIBRARY_VERSION_MAJOR != 3 || AMUDP_LIBRARY_VERSION_MINOR != 16
#error "AMUDP_LIBRARY_VERSION_MAJOR / MINOR"
#endif
#if !defined(AMUDP_DEBUG_CONFIG) || !(defined(AMUDP_DEBUG) || defined(AMUDP_NDEBUG))
#error "build mode"
#endif

/* the AM-2 query macros are constants too (gex_AM_MaxArgs() and friends) */
CA_STATIC_ASSERT(AM_MaxShort() == AMUDP_MAX_SHORT);
CA_STATIC_ASSERT(AM_MaxMedium() == AMUDP_MAX_MEDIUM);
CA_STATIC_ASSERT(AM_MaxLong() == AMUDP_MAX_LONG);
CA_STATIC_ASSERT(AM_MaxNumHandlers() == AMUDP_MAX_NUMHANDLERS);
CA_STATIC_ASSERT(AMUDP_MAX_NUMTRANSLATIONS == (1U << 20));
CA_STATIC_ASSERT(sizeof(GASNET_CORE_VERSION_STR) == sizeof("3.16"));
CA_STATIC_ASSERT(AM_OK == 0 && AM_ERR_NOT_SENT == 4 && AM_ERR_IN_USE == 5);
CA_STATIC_ASSERT(AM_REQUEST_M == 1 && AM_REPLY_XFER_M == 6 && AM_NONE == 0 && AM_ALL == 1);

/* a buffer sized by the limits */
static char ca_medium_buf[AMUDP_MAX_MEDIUM + 4 * AMUDP_MAX_SHORT];

int ca_touch(void);
int ca_touch(void) { return (int)sizeof ca_medium_buf; }
