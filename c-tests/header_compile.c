/*
 * header_compile.c -- compile-only check of include/am.h and include/ramp.h.
 *
 * Never run and never linked: it expands every AM-2 macro family at M = 0 and M = 16,
 * the system-parameter and handler macros, and checks sizes and layout with static
 * assertions.  It must compile cleanly as C11 and as C++17:
 *   gcc -std=c11 -Wall -Wextra -Werror -Iinclude -c c-tests/header_compile.c
 *   g++ -x c++ -std=c++17 -Wall -Werror -Iinclude -c c-tests/header_compile.c
 */
#include "am.h"
#include "ramp.h"
#include "am.h" /* include guards: a second inclusion is harmless */

#ifdef __cplusplus
#define HC_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define HC_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* Types */
HC_STATIC_ASSERT(sizeof(en_t) == 32, "en_t is 32 bytes");
HC_STATIC_ASSERT(sizeof(tag_t) == 8, "tag_t is 64 bits");
HC_STATIC_ASSERT(sizeof(handler_t) == 1, "handler_t is 8 bits");
HC_STATIC_ASSERT(sizeof(op_t) == sizeof(int), "op_t is int");
HC_STATIC_ASSERT(sizeof(eb_t) == sizeof(void *), "eb_t is a handle");
HC_STATIC_ASSERT(sizeof(ep_t) == sizeof(void *), "ep_t is a handle");

/* System parameters */
HC_STATIC_ASSERT(AM_MaxShort() == 16, "16 handler arguments");
HC_STATIC_ASSERT(AM_MaxMedium() >= 65000, "medium payload at least 65000 bytes");
HC_STATIC_ASSERT(AM_MaxLong() >= 1048576, "long payload at least 1 MiB");
HC_STATIC_ASSERT(AM_MaxNumHandlers() == 256, "256 handlers");

/* Statistics: AMUDP layout first (320 bytes), then ramp's 15 counters; fits in a medium */
HC_STATIC_ASSERT(sizeof(ramp_stats_t) < AM_MaxMedium(), "stats fit in one medium message");
HC_STATIC_ASSERT(offsetof(ramp_stats_t, ReturnedMessages) == 21 * 8, "stats layout");
HC_STATIC_ASSERT(offsetof(ramp_stats_t, RequestMinLatency) == 24 * 8, "stats layout");
HC_STATIC_ASSERT(offsetof(ramp_stats_t, RequestDataBytesSent) == 27 * 8, "stats layout");
HC_STATIC_ASSERT(offsetof(ramp_stats_t, TotalBytesSent) == 39 * 8, "stats layout");
HC_STATIC_ASSERT(offsetof(ramp_stats_t, RequestLatencySamples) == 40 * 8, "stats layout");
HC_STATIC_ASSERT(offsetof(ramp_stats_t, RttSamples) == 54 * 8, "stats layout");
HC_STATIC_ASSERT(sizeof(ramp_stats_t) == 60 * 8, "stats size");
HC_STATIC_ASSERT(ramp_NumCategories == 3, "three categories");

/* Codes */
HC_STATIC_ASSERT(AM_OK == 0 && AM_ERR_NOT_INIT == 1 && AM_ERR_BAD_ARG == 2 &&
                 AM_ERR_RESOURCE == 3 && AM_ERR_NOT_SENT == 4 && AM_ERR_IN_USE == 5,
                 "return codes");
HC_STATIC_ASSERT(EBADARGS == 1 && EBADENTRY == 2 && EBADTAG == 3 && EBADHANDLER == 4 &&
                 EBADSEGOFF == 5 && EBADLENGTH == 6 && EBADENDPOINT == 7 &&
                 ECONGESTION == 8 && EUNREACHABLE == 9 && EREPLYREJECTED == 10,
                 "status codes");
HC_STATIC_ASSERT(AM_REQUEST_M == 1 && AM_REQUEST_IM == 2 && AM_REQUEST_XFER_M == 3 &&
                 AM_REPLY_M == 4 && AM_REPLY_IM == 5 && AM_REPLY_XFER_M == 6, "opcodes");
HC_STATIC_ASSERT(AM_NONE == 0 && AM_ALL == 1 && AM_NOEVENTS == 0 && AM_NOTEMPTY == 1 &&
                 AM_SEQ == 0 && AM_PAR == 1, "other constants");

/* Version macros are usable in #if */
#if RAMP_VERSION != RAMP_VERSION_MAJOR * 10000 + RAMP_VERSION_MINOR * 100 + RAMP_VERSION_PATCH
#error "RAMP_VERSION does not match its components"
#endif
#if RAMP_ABI_VERSION < 0
#error "RAMP_ABI_VERSION"
#endif

/* Handlers with the prototypes ramp calls */
static void hc_short0(void *token) { (void)token; }
static void hc_short16(void *token, int32_t a0, int32_t a1, int32_t a2, int32_t a3, int32_t a4,
                       int32_t a5, int32_t a6, int32_t a7, int32_t a8, int32_t a9, int32_t a10,
                       int32_t a11, int32_t a12, int32_t a13, int32_t a14, int32_t a15)
{
  (void)token; (void)a0; (void)a1; (void)a2; (void)a3; (void)a4; (void)a5; (void)a6;
  (void)a7; (void)a8; (void)a9; (void)a10; (void)a11; (void)a12; (void)a13; (void)a14;
  (void)a15;
}
static void hc_medium(void *token, void *buf, size_t nbytes, int32_t a0)
{
  (void)token; (void)buf; (void)nbytes; (void)a0;
}
static void hc_returned(int status, op_t opcode, void *token)
{
  (void)status; (void)opcode; (void)token;
}

/* Not static, never called: it only has to compile. */
int header_compile_never_called(ep_t ep, eb_t eb, void *token);
int header_compile_never_called(ep_t ep, eb_t eb, void *token)
{
  static char src[64];
  en_t name;
  handler_t h;
  int n, rc = 0;
  ramp_category_t cat = ramp_Short;
  ramp_stats_t st = ramp_initial_stats;
  char text[64];

  rc |= AM_AllocateEndpoint(eb, &ep, &name);
  rc |= AM_SetHandler(ep, 0, hc_returned);
  rc |= AM_SetHandler(ep, 1, hc_short0);
  rc |= AM_SetHandler(ep, 2, hc_short16);
  rc |= AM_SetHandlerAny(ep, &h, hc_medium);
  rc |= AM_MaxNumTranslations(&n);
  rc |= AM_GetNumHandlers(ep, &n);
  rc |= AM_SetNumHandlers(ep, 256);
  rc |= ramp_enEqual(name, name);
  rc |= ramp_enToString(name, text, sizeof text);
  rc |= ramp_GetTokenInfo(token, &h, &cat, &n);
  rc |= ramp_AggregateStatistics(&st, &ramp_initial_stats);
  (void)ramp_DumpStatistics(NULL, &st, 0);

  /* M = 0 */
  rc |= AM_Request0(ep, 0, 1);
  rc |= AM_RequestI0(ep, 0, 1, src, sizeof src);
  rc |= AM_RequestXfer0(ep, 0, 0, 1, src, sizeof src);
  rc |= AM_RequestXferAsync0(ep, 0, 0, 1, src, sizeof src);
  rc |= AM_Reply0(token, 1);
  rc |= AM_ReplyI0(token, 1, src, sizeof src);
  rc |= AM_ReplyXfer0(token, 0, 1, src, sizeof src);

  /* M = 16, with arguments of assorted types (each is cast to int32_t) */
  rc |= AM_Request16(ep, 0, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  rc |= AM_RequestI16(ep, 0, 2, src, sizeof src, 'a', 1u, 2L, 3ul, 4LL, (short)5, 6.0, 7.5f,
                      8, 9, 10, 11, 12, 13, 14, n);
  rc |= AM_RequestXfer16(ep, 0, 8, 2, src, sizeof src, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                         12, 13, 14, 15);
  rc |= AM_RequestXferAsync16(ep, 0, 8, 2, src, sizeof src, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                              11, 12, 13, 14, 15);
  rc |= AM_Reply16(token, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  rc |= AM_ReplyI16(token, 2, src, sizeof src, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
                    15);
  rc |= AM_ReplyXfer16(token, 8, 2, src, sizeof src, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                       13, 14, 15);

  /* the argument-vector forms */
  {
    const int32_t args[16] = {0};
    rc |= ramp_RequestArgv(ep, 0, 1, ramp_Medium, src, sizeof src, 0, 0, 16, args);
    rc |= ramp_ReplyArgv(token, 1, ramp_Long, src, sizeof src, 8, 16, args);
  }
  return rc;
}
