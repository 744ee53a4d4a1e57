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
