/*
 * am.h -- the Active Messages II (AM-2) C API, as implemented by ramp.
 *
 * Hand-curated and stable: the names, types, constants, macro argument orders and
 * prototypes below are the classic AM-2 interface as GASNet's AMUDP realises it, so
 * existing AM-2 programs compile against this header unchanged.  ramp's own extensions
 * live in <ramp.h> (which includes this header).  The prototypes are checked against
 * the symbols exported by libramp.so and the declarations cbindgen generates from the
 * Rust code (c-tests/check_headers.py).
 *
 * Return values
 *   Every function returns an AM_* code (AM_OK = 0 on success) unless noted.  Bad
 *   arguments (NULL handles or out-pointers, out-of-range indices, numargs > 16, ...)
 *   always return AM_ERR_BAD_ARG; they never crash.  Out-parameters are written only
 *   on success.  An internal error (a panic inside ramp) never reaches the caller: it
 *   prints "ramp: internal error (panic) in NAME" on stderr and the function returns
 *   AM_ERR_RESOURCE.
 *
 * Threads
 *   A bundle allocated with AM_SEQ, and every endpoint in it, must be used by ONE
 *   thread at a time (the caller serialises; no locking is done for you).  A bundle
 *   allocated with AM_PAR, and its endpoints, may be used by MANY threads concurrently
 *   (polling, requests and replies from several threads are safe).
 *
 * Tokens
 *   The `void *token` a handler receives is valid ONLY during that handler invocation:
 *   use it for AM_Reply*, AM_GetSourceEndpoint, AM_GetDestEndpoint, AM_GetMsgTag,
 *   ramp_GetSourceId and ramp_GetTokenInfo inside the handler, never after it returns.
 *   A request handler may reply at most once; a reply handler cannot send anything.
 *
 * Buffers
 *   Requests and replies copy their arguments and payload before they return, so the
 *   source buffer may be reused (or freed) as soon as the call returns -- this holds
 *   for the Async Xfer form as well.
 *
 * Units
 *   nbytes, cnt, segment lengths: bytes.  dest_offset / desto: bytes from the start of
 *   the DESTINATION endpoint's segment (AM_SetSeg on the receiver).  destep: an index
 *   into the sending endpoint's translation table (not a name).  Handler arguments:
 *   32-bit signed integers (each macro argument is cast to int32_t, so floating-point
 *   values are converted and wider integers truncated).  Tags: 64-bit.
 *
 * Handler prototypes (what ramp calls; register them with AM_SetHandler)
 *   short request/reply, N = 0..16 args:
 *       void h(void *token, int32_t a0, ..., int32_t aN-1);
 *   medium and long (Xfer) request/reply:
 *       void h(void *token, void *buf, size_t nbytes, int32_t a0, ..., int32_t aN-1);
 *     medium: buf is a library-owned, 8-byte-aligned buffer, valid (and writable) only
 *             until the handler returns;
 *     long:   buf = segment base + dest_offset in the receiving endpoint's segment;
 *             the data is already there when the handler runs.
 *     nbytes is always below 2^31, so handlers declared with `int nbytes` keep working.
 *   handler 0, the returned ("undeliverable") message handler:
 *       void h(int status, op_t opcode, void *token);
 *     status is an E* code, opcode an AM_REQUEST_* / AM_REPLY_* code, token refers to
 *     the returned message (it may be interrogated but not replied to).  The default
 *     handler 0 prints the message and aborts.
 *   A request handler that returns without replying causes an automatic empty reply
 *   (no handler runs at the requester).  A request to the endpoint's own name
 *   (loopback) runs the handler synchronously inside the request call.
 *
 * Order (what is promised between messages of one sender to one endpoint)
 *   Requests: a put or get sent before a request is performed before that
 *   request's handler runs (ramp.h); nothing more is promised.  A short request
 *   goes ahead of the long requests (Xfers) queued before it whose sending has
 *   not begun (it does not wait behind bulk), and may run before them.  A
 *   short or medium request that arrives whole (one packet) while an earlier one
 *   is being repaired runs its handler at once, unless a put, get or long request
 *   sent before it is not yet acknowledged: then it waits for that.  Long
 *   requests (Xfers) and larger ones wait for those before them.  Each request
 *   still runs at most once.  Short replies likewise go ahead of long replies
 *   not begun.
 *   Replies: NO order.  A reply that arrives whole (one packet: any short reply, a
 *   medium or long one up to about one datagram) while an earlier one is still
 *   being repaired runs its handler at once; a larger one waits for those before
 *   it.  Each reply still runs exactly once and frees its own request's credit.
 *   AM-2 promises no order between messages; do not rely on more.
 */
#ifndef RAMP_AM_H
#define RAMP_AM_H

#include <stdint.h>
#include <stddef.h>
#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------
 * Types
 * ---------------------------------------------------------------------------------- */

/* Message tag (64 bits).  AM_NONE and AM_ALL are special values, see below. */
typedef uint64_t tag_t;
/* Index into an endpoint's 256-entry handler table. */
typedef uint8_t  handler_t;
/* Opcode passed to handler 0: one of AM_REQUEST_M ... AM_REPLY_XFER_M. */
typedef int      op_t;
/* Bundle handle: opaque, never dereference it. */
typedef struct ramp_bundle   *eb_t;
/* Endpoint handle: opaque, never dereference it. */
typedef struct ramp_endpoint *ep_t;
/* Global endpoint name: 32 opaque bytes (IPv4, IPv6, ...).  Copy it by value; compare
 * it only with ramp_enEqual (see ramp.h); print it with ramp_enToString. */
typedef struct ramp_en { uint64_t _opaque[4]; } en_t;
/* Generic, unprototyped handler pointer; AM_SetHandler casts handlers to it.  (The
 * pragmas only keep -Wstrict-prototypes quiet about this deliberate declaration.) */
#if defined(__GNUC__) && !defined(__cplusplus)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#endif
typedef void (*am_handler_fn_t)();
#if defined(__GNUC__) && !defined(__cplusplus)
#pragma GCC diagnostic pop
#endif

/* ------------------------------------------------------------------------------------
 * Constants
 * ---------------------------------------------------------------------------------- */

/* Function return codes */
#define AM_OK            0  /* success */
#define AM_ERR_NOT_INIT  1  /* layer or endpoint not initialised (e.g. before AM_SetExpectedResources) */
#define AM_ERR_BAD_ARG   2  /* invalid parameter */
#define AM_ERR_RESOURCE  3  /* resource problem, or call made in the wrong state */
#define AM_ERR_NOT_SENT  4  /* synchronous message not sent */
/* ramp never returns AM_ERR_NOT_SENT (AMUDP does not either): a send is either refused
 * before anything goes out, with AM_ERR_BAD_ARG (bad arguments, unmapped index),
 * AM_ERR_NOT_INIT / AM_ERR_RESOURCE (wrong state) or AM_ERR_IN_USE (AM_RequestXferAsyncM
 * without a credit), or accepted and delivered reliably; a message that cannot be
 * delivered after it was accepted comes back to handler 0 (EUNREACHABLE, ECONGESTION,
 * or the receiver's reason). */
#define AM_ERR_IN_USE    5  /* resource busy (AM_RequestXferAsyncM could not send now) */

/* Status codes passed to handler 0 (why a message was returned) */
#define EBADARGS         1  /* bad request/reply arguments */
/* EBADARGS: no ramp receiver refuses a message with it (bad arguments are caught at the
 * sender: AM_ERR_BAD_ARG; bad lengths at the receiver: EBADLENGTH). Handler 0 sees it
 * only for a returned message whose status byte is not a known code (a corrupt or
 * foreign peer): ramp reports that as EBADARGS. */
#define EBADENTRY        2  /* translation index selects an unbound entry */
/* EBADENTRY: never produced by ramp (nor AMUDP): a request to an unmapped translation
 * index is refused at the sender, before sending, with AM_ERR_BAD_ARG. */
#define EBADTAG          3  /* sender's tag did not match the receiving endpoint's tag */
#define EBADHANDLER      4  /* unregistered handler index at the receiver */
#define EBADSEGOFF       5  /* bad offset into the destination segment */
#define EBADLENGTH       6  /* length exceeds the segment end or the category limit */
#define EBADENDPOINT     7  /* destination endpoint unknown / sender not known to the receiver */
#define ECONGESTION      8  /* receiver kept refusing for lack of buffer */
#define EUNREACHABLE     9  /* no answer: retries exhausted */
/* EUNREACHABLE: the peer said nothing for RAMP_PEER_TIMEOUT_MS (default 10 s) while
 * messages to it were outstanding; they, and every new one, come back at once until a new
 * association with it succeeds. A process that neither polls nor sends for that long
 * looks dead to its peers: raise RAMP_PEER_TIMEOUT_MS for long computations without
 * AM_Poll. */
#define EREPLYREJECTED  10  /* destination refused the reply */
/* EREPLYREJECTED: never produced by ramp (nor AMUDP): a reply the destination refuses
 * comes back to handler 0 with the specific reason instead (EBADTAG, EBADHANDLER,
 * EBADLENGTH, EBADSEGOFF, EBADENDPOINT), with the reply's opcode. */

/* Opcodes (op_t) passed to handler 0: kind of the returned message */
#define AM_REQUEST_M       1  /* short request */
#define AM_REQUEST_IM      2  /* medium request */
#define AM_REQUEST_XFER_M  3  /* long request */
#define AM_REPLY_M         4  /* short reply */
#define AM_REPLY_IM        5  /* medium reply */
#define AM_REPLY_XFER_M    6  /* long reply */

/* Special tag values: an endpoint whose own tag is AM_NONE accepts nothing; AM_ALL
 * accepts any message tag; any other value accepts only messages carrying that tag. */
#define AM_NONE  0
#define AM_ALL   1

/* Bundle event masks (AM_SetEventMask). A new bundle's mask is AM_NOEVENTS. */
#define AM_NOEVENTS  0  /* AM_WaitSema would never return: ramp returns AM_ERR_RESOURCE */
/* AM_NOEVENTS in ramp (pinned by c-tests/t_waitsema.c): AM_WaitSema on a bundle whose
 * mask is AM_NOEVENTS (also a new bundle whose mask was never set) returns
 * AM_ERR_RESOURCE at once, without blocking, polling or running a handler; the process
 * goes on and the mask stays AM_NOEVENTS. (AMUDP treats this as a fatal error and
 * aborts; the spec calls it fatal because the call would never return.) */
#define AM_NOTEMPTY  1  /* wake AM_WaitSema when an endpoint has a received message */

/* Bundle types (AM_AllocateBundle) */
#define AM_SEQ  0  /* used by one thread at a time */
#define AM_PAR  1  /* safe to use from many threads concurrently */

/* ------------------------------------------------------------------------------------
 * System parameters (function-like macros: write the parentheses; their address
 * cannot be taken).  The statement-like ones yield an AM_* code: use that value.
 * ---------------------------------------------------------------------------------- */

#define AM_MaxShort()       16        /* max handler arguments */
#define AM_MaxMedium()      65000     /* max medium (AM_RequestIM/AM_ReplyIM) payload, bytes */
#define AM_MaxLong()        1048576   /* max long (Xfer) payload, bytes */
#define AM_MaxNumHandlers() 256       /* handler table size */
/* Stores the maximum translation-table size in *(trans); yields AM_OK. */
#define AM_MaxNumTranslations(trans) (*(trans) = (1U<<20), AM_OK)
/* Stores 256 in *(pnhandlers) and yields AM_OK; AM_ERR_BAD_ARG if ep is NULL. */
#define AM_GetNumHandlers(ep, pnhandlers) \
  ((ep) ? (*(pnhandlers) = 256, AM_OK) : AM_ERR_BAD_ARG)
/* Yields AM_OK if nhandlers == 256, else AM_ERR_RESOURCE; AM_ERR_BAD_ARG if ep is NULL. */
#define AM_SetNumHandlers(ep, nhandlers) \
  ((ep) ? ((nhandlers) == 256 ? AM_OK : AM_ERR_RESOURCE) : AM_ERR_BAD_ARG)

/* ------------------------------------------------------------------------------------
 * Initialisation and termination
 * ---------------------------------------------------------------------------------- */

/* Reference-counted initialisation. Returns AM_OK, or AM_ERR_BAD_ARG (after printing the
 * variable and what was expected) when a RAMP_* environment variable holds a bad value. */
int AM_Init(void);
/* Undoes one AM_Init; the last matching call frees every bundle and endpoint. */
int AM_Terminate(void);

/* ------------------------------------------------------------------------------------
 * Bundles and endpoints
 * ---------------------------------------------------------------------------------- */

/* Allocates a bundle of type AM_SEQ or AM_PAR (any other type: AM_ERR_BAD_ARG). */
int AM_AllocateBundle(int type, eb_t *endb);
/* Frees every endpoint in the bundle, then the bundle. */
int AM_FreeBundle(eb_t bundle);
/* Creates an endpoint in `bundle`; returns its handle and its global name.  New
 * endpoints have tag AM_NONE, no segment, a 256-entry empty translation table and the
 * default handler 0. */
int AM_AllocateEndpoint(eb_t bundle, ep_t *endp, en_t *endpoint_name);
/* Frees the endpoint (AM_ERR_RESOURCE if it is not in its bundle). */
int AM_FreeEndpoint(ep_t ea);
/* Moves `ea` from `from_bundle` to `to_bundle` (AM_ERR_RESOURCE if not in from_bundle). */
int AM_MoveEndpoint(ep_t ea, eb_t from_bundle, eb_t to_bundle);

/* ------------------------------------------------------------------------------------
 * VM segment: the target area of long (Xfer) messages.  Lengths in bytes.
 * ---------------------------------------------------------------------------------- */

/* Reports the endpoint's segment base address and length. */
int AM_GetSeg(ep_t ea, void **addr, uintptr_t *nbytes);
/* Sets the endpoint's segment; may be called at any time.  A long message's bytes may go
 * into the segment as they arrive, before its handler's turn (never while a message ahead
 * of it waits for its handler): one whose bytes went into a segment replaced since is
 * refused with EBADSEGOFF (returned to the sender's handler 0), and nothing is written
 * into the old segment once AM_SetSeg returns; one refused at its turn for another reason
 * (its handler removed, the tag changed meanwhile) leaves its bytes in the segment. */
int AM_SetSeg(ep_t ea, void *addr, uintptr_t nbytes);
/* Stores the maximum segment length ((uintptr_t)-1). */
int AM_MaxSegLength(uintptr_t *nbytes);

/* ------------------------------------------------------------------------------------
 * Tags
 * ---------------------------------------------------------------------------------- */

/* Reports the endpoint's own tag. */
int AM_GetTag(ep_t ea, tag_t *tag);
/* Sets the endpoint's own tag (AM_NONE refuses everything, AM_ALL accepts any tag). */
int AM_SetTag(ep_t ea, tag_t tag);

/* ------------------------------------------------------------------------------------
 * Translation table: index -> (remote endpoint name, tag sent with each message).
 * Map/MapAny/UnMap are legal only before AM_SetExpectedResources.
 * ---------------------------------------------------------------------------------- */

/* Binds table entry `index` to (name, tag); AM_ERR_RESOURCE if already mapped. */
int AM_Map(ep_t ea, int index, en_t name, tag_t tag);
/* Binds the lowest free entry to (name, tag) and returns it in *index. */
int AM_MapAny(ep_t ea, int *index, en_t name, tag_t tag);
/* Unbinds entry `index` (AM_ERR_RESOURCE if it is not mapped). */
int AM_UnMap(ep_t ea, int index);
/* Reports the current table size (initially 256). */
int AM_GetNumTranslations(ep_t ep, int *pntrans);
/* Resizes the table (values below 256 are raised to 256). */
int AM_SetNumTranslations(ep_t ep, int ntrans);
/* Returns AM_OK if entry i is mapped, AM_ERR_RESOURCE if not (not a boolean). */
int AM_GetTranslationInuse(ep_t ea, int i);
/* Reports the tag of mapped entry i. */
int AM_GetTranslationTag(ep_t ea, int i, tag_t *tag);
/* Reports the name of mapped entry i. */
int AM_GetTranslationName(ep_t ea, int i, en_t *gan);
/* Freezes the translation table and allocates per-peer state; required exactly once
 * before any AM_Poll, AM_Request* or AM_Reply* on the endpoint.  n_endpoints is ignored;
 * n_outstanding_requests (credits per peer) must be 1..1024. */
int AM_SetExpectedResources(ep_t ea, int n_endpoints, int n_outstanding_requests);

/* ------------------------------------------------------------------------------------
 * Handler table (any index 0..255; 0 is the returned-message handler)
 * ---------------------------------------------------------------------------------- */

/* Installs `function` at index `handler`; use the AM_SetHandler macro. */
int _AM_SetHandler(ep_t ea, handler_t handler, am_handler_fn_t function);
/* Installs `function` at the first free index in 1..255 and returns it in *handler;
 * use the AM_SetHandlerAny macro. */
int _AM_SetHandlerAny(ep_t ea, handler_t *handler, am_handler_fn_t function);
#define AM_SetHandler(ea, handler, function) \
  _AM_SetHandler((ea), (handler), (am_handler_fn_t)(function))
#define AM_SetHandlerAny(ea, handler, function) \
  _AM_SetHandlerAny((ea), (handler), (am_handler_fn_t)(function))

/* ------------------------------------------------------------------------------------
 * Events and blocking
 * ---------------------------------------------------------------------------------- */

/* Reports the bundle's event mask. */
int AM_GetEventMask(eb_t eb, int *mask);
/* Sets the bundle's event mask: AM_NOEVENTS or AM_NOTEMPTY (else AM_ERR_BAD_ARG). */
int AM_SetEventMask(eb_t eb, int mask);
/* Sleeps until an endpoint of the bundle has a received message, then polls once
 * (handlers may run inside).  With the mask AM_NOEVENTS it returns AM_ERR_RESOURCE at
 * once (AMUDP: a fatal error); see AM_NOEVENTS. */
int AM_WaitSema(eb_t eb);

/* ------------------------------------------------------------------------------------
 * Message interrogation (valid only inside the handler that received the token)
 * ---------------------------------------------------------------------------------- */

/* Reports the sender's global name. */
int AM_GetSourceEndpoint(void *token, en_t *gan);
/* Reports the local endpoint that received the message. */
int AM_GetDestEndpoint(void *token, ep_t *endp);
/* Reports the tag carried by the message. */
int AM_GetMsgTag(void *token, tag_t *tagp);

/* ------------------------------------------------------------------------------------
 * Polling
 * ---------------------------------------------------------------------------------- */

/* Receives and dispatches pending messages and services retransmission timers for
 * every endpoint of the bundle that has had AM_SetExpectedResources.  Handlers run
 * only inside AM_Poll, AM_WaitSema, AM_Request* (which poll) and loopback sends. */
int AM_Poll(eb_t bundle);

/* ------------------------------------------------------------------------------------
 * Requests and replies: the real functions behind the macro families below.
 *
 * dest is a translation-table index on ep.  numargs must be 0..16 (else
 * AM_ERR_BAD_ARG); the variable arguments are read as int (each macro argument is
 * cast to int32_t).  Medium payloads: nbytes <= AM_MaxMedium(); long payloads:
 * nbytes <= AM_MaxLong(); source_addr may be NULL only when nbytes == 0.  Requests
 * poll first and block (polling) for a send credit, except the async long form, which
 * returns AM_ERR_IN_USE instead.  Replies never poll or block and may only be issued
 * from a request handler with its token.  All copy the source before returning.
 *
 * Batching: a small request (payload up to 1 KiB) to a peer reached over UDP that still
 * owes the answer to an earlier request of this endpoint may wait, with up to 31 others,
 * to leave as one datagram: until the next call that polls or waits on the endpoint
 * (AM_Poll, AM_WaitSema, a request that polls, a barrier), the bundle's progress
 * thread's next pass, the endpoint's release, or the process's exit.  A program waits for that earlier
 * answer in such a call anyway; a lone request (a ping-pong's) leaves at once.
 * RAMP_REQUEST_BATCH=0 sends every request at once.
 * ---------------------------------------------------------------------------------- */

/* Short request with numargs int arguments. */
int ramp_Request(ep_t ep, uint32_t dest, handler_t handler, int numargs, ...);
/* Medium request: nbytes of source_addr delivered in a library buffer. */
int ramp_RequestI(ep_t ep, uint32_t dest, handler_t handler, void *source_addr, size_t nbytes,
                  int numargs, ...);
/* Long request: nbytes of source_addr written at dest_offset in the destination segment;
 * async != 0 returns AM_ERR_IN_USE instead of blocking for a credit. */
int ramp_RequestXfer(ep_t ep, uint32_t dest, handler_t handler, void *source_addr, size_t nbytes,
                     uintptr_t dest_offset, int async, int numargs, ...);
/* Short reply (from a request handler, with its token). */
int ramp_Reply(void *token, handler_t handler, int numargs, ...);
/* Medium reply. */
int ramp_ReplyI(void *token, handler_t handler, void *source_addr, size_t nbytes, int numargs,
                ...);
/* Long reply: written at dest_offset in the requester's segment. */
int ramp_ReplyXfer(void *token, handler_t handler, void *source_addr, size_t nbytes,
                   uintptr_t dest_offset, int numargs, ...);

/* va_list twins of the six functions above (argptr holds numargs ints). */
int ramp_RequestVA(ep_t ep, uint32_t dest, handler_t handler, int numargs, va_list argptr);
int ramp_RequestIVA(ep_t ep, uint32_t dest, handler_t handler, void *source_addr, size_t nbytes,
                    int numargs, va_list argptr);
int ramp_RequestXferVA(ep_t ep, uint32_t dest, handler_t handler, void *source_addr,
                       size_t nbytes, uintptr_t dest_offset, int async, int numargs,
                       va_list argptr);
int ramp_ReplyVA(void *token, handler_t handler, int numargs, va_list argptr);
int ramp_ReplyIVA(void *token, handler_t handler, void *source_addr, size_t nbytes, int numargs,
                  va_list argptr);
int ramp_ReplyXferVA(void *token, handler_t handler, void *source_addr, size_t nbytes,
                     uintptr_t dest_offset, int numargs, va_list argptr);

/* ------------------------------------------------------------------------------------
 * AM-2 macro families, M = 0..16 arguments a0..aM-1 (each cast to int32_t).
 * Note the AM-2 argument order of the Xfer forms: desto (dest_offset) comes BEFORE
 * hnum here, but after cnt in the ramp_*Xfer functions.
 *
 *   AM_RequestM(ep, destep, hnum, a0..)                       short request
 *   AM_RequestIM(ep, destep, hnum, sa, cnt, a0..)             medium request
 *   AM_RequestXferM(ep, destep, desto, hnum, sa, cnt, a0..)   long request (blocks for a credit)
 *   AM_RequestXferAsyncM(ep, destep, desto, hnum, sa, cnt, a0..)
 *                                                             long request, AM_ERR_IN_USE
 *                                                             instead of blocking
 *   AM_ReplyM(token, hnum, a0..)                              short reply
 *   AM_ReplyIM(token, hnum, sa, cnt, a0..)                    medium reply
 *   AM_ReplyXferM(token, desto, hnum, sa, cnt, a0..)          long reply
 * ---------------------------------------------------------------------------------- */

/* AM_RequestM */
#define AM_Request0(ep, destep, hnum) \
  ramp_Request((ep), (destep), (hnum), 0)
#define AM_Request1(ep, destep, hnum, a0) \
  ramp_Request((ep), (destep), (hnum), 1, (int32_t)(a0))
#define AM_Request2(ep, destep, hnum, a0, a1) \
  ramp_Request((ep), (destep), (hnum), 2, (int32_t)(a0), (int32_t)(a1))
#define AM_Request3(ep, destep, hnum, a0, a1, a2) \
  ramp_Request((ep), (destep), (hnum), 3, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2))
#define AM_Request4(ep, destep, hnum, a0, a1, a2, a3) \
  ramp_Request((ep), (destep), (hnum), 4, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3))
#define AM_Request5(ep, destep, hnum, a0, a1, a2, a3, a4) \
  ramp_Request((ep), (destep), (hnum), 5, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4))
#define AM_Request6(ep, destep, hnum, a0, a1, a2, a3, a4, a5) \
  ramp_Request((ep), (destep), (hnum), 6, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5))
#define AM_Request7(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6) \
  ramp_Request((ep), (destep), (hnum), 7, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6))
#define AM_Request8(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7) \
  ramp_Request((ep), (destep), (hnum), 8, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7))
#define AM_Request9(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8) \
  ramp_Request((ep), (destep), (hnum), 9, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8))
#define AM_Request10(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
  ramp_Request((ep), (destep), (hnum), 10, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), \
    (int32_t)(a9))
#define AM_Request11(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) \
  ramp_Request((ep), (destep), (hnum), 11, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), \
    (int32_t)(a9), (int32_t)(a10))
#define AM_Request12(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11) \
  ramp_Request((ep), (destep), (hnum), 12, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), \
    (int32_t)(a9), (int32_t)(a10), (int32_t)(a11))
#define AM_Request13(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12) \
  ramp_Request((ep), (destep), (hnum), 13, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), \
    (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12))
#define AM_Request14(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, \
    a13) \
  ramp_Request((ep), (destep), (hnum), 14, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), \
    (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13))
#define AM_Request15(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, \
    a13, a14) \
  ramp_Request((ep), (destep), (hnum), 15, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), \
    (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), \
    (int32_t)(a14))
#define AM_Request16(ep, destep, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, \
    a13, a14, a15) \
  ramp_Request((ep), (destep), (hnum), 16, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), \
    (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), \
    (int32_t)(a14), (int32_t)(a15))

/* AM_RequestIM */
#define AM_RequestI0(ep, destep, hnum, sa, cnt) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 0)
#define AM_RequestI1(ep, destep, hnum, sa, cnt, a0) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 1, (int32_t)(a0))
#define AM_RequestI2(ep, destep, hnum, sa, cnt, a0, a1) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 2, (int32_t)(a0), (int32_t)(a1))
#define AM_RequestI3(ep, destep, hnum, sa, cnt, a0, a1, a2) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 3, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2))
#define AM_RequestI4(ep, destep, hnum, sa, cnt, a0, a1, a2, a3) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 4, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3))
#define AM_RequestI5(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 5, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4))
#define AM_RequestI6(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 6, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5))
#define AM_RequestI7(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 7, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6))
#define AM_RequestI8(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 8, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7))
#define AM_RequestI9(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 9, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8))
#define AM_RequestI10(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 10, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8), (int32_t)(a9))
#define AM_RequestI11(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 11, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8), (int32_t)(a9), (int32_t)(a10))
#define AM_RequestI12(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, \
    a11) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 12, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11))
#define AM_RequestI13(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, \
    a11, a12) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 13, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12))
#define AM_RequestI14(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, \
    a11, a12, a13) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 14, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), \
    (int32_t)(a13))
#define AM_RequestI15(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, \
    a11, a12, a13, a14) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 15, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), \
    (int32_t)(a13), (int32_t)(a14))
#define AM_RequestI16(ep, destep, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, \
    a11, a12, a13, a14, a15) \
  ramp_RequestI((ep), (destep), (hnum), (sa), (cnt), 16, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), \
    (int32_t)(a13), (int32_t)(a14), (int32_t)(a15))

/* AM_RequestXferM */
#define AM_RequestXfer0(ep, destep, desto, hnum, sa, cnt) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 0)
#define AM_RequestXfer1(ep, destep, desto, hnum, sa, cnt, a0) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 1, (int32_t)(a0))
#define AM_RequestXfer2(ep, destep, desto, hnum, sa, cnt, a0, a1) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 2, (int32_t)(a0), \
    (int32_t)(a1))
#define AM_RequestXfer3(ep, destep, desto, hnum, sa, cnt, a0, a1, a2) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 3, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2))
#define AM_RequestXfer4(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 4, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3))
#define AM_RequestXfer5(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 5, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4))
#define AM_RequestXfer6(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 6, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5))
#define AM_RequestXfer7(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 7, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6))
#define AM_RequestXfer8(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 8, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7))
#define AM_RequestXfer9(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 9, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8))
#define AM_RequestXfer10(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, \
    a8, a9) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 10, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8), (int32_t)(a9))
#define AM_RequestXfer11(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, \
    a8, a9, a10) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 11, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10))
#define AM_RequestXfer12(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, \
    a8, a9, a10, a11) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 12, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11))
#define AM_RequestXfer13(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, \
    a8, a9, a10, a11, a12) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 13, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), \
    (int32_t)(a12))
#define AM_RequestXfer14(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, \
    a8, a9, a10, a11, a12, a13) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 14, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), \
    (int32_t)(a12), (int32_t)(a13))
#define AM_RequestXfer15(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, \
    a8, a9, a10, a11, a12, a13, a14) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 15, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), \
    (int32_t)(a12), (int32_t)(a13), (int32_t)(a14))
#define AM_RequestXfer16(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, \
    a8, a9, a10, a11, a12, a13, a14, a15) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 0, 16, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), \
    (int32_t)(a12), (int32_t)(a13), (int32_t)(a14), (int32_t)(a15))

/* AM_RequestXferAsyncM */
#define AM_RequestXferAsync0(ep, destep, desto, hnum, sa, cnt) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 0)
#define AM_RequestXferAsync1(ep, destep, desto, hnum, sa, cnt, a0) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 1, (int32_t)(a0))
#define AM_RequestXferAsync2(ep, destep, desto, hnum, sa, cnt, a0, a1) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 2, (int32_t)(a0), \
    (int32_t)(a1))
#define AM_RequestXferAsync3(ep, destep, desto, hnum, sa, cnt, a0, a1, a2) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 3, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2))
#define AM_RequestXferAsync4(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 4, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3))
#define AM_RequestXferAsync5(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 5, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4))
#define AM_RequestXferAsync6(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 6, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5))
#define AM_RequestXferAsync7(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 7, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6))
#define AM_RequestXferAsync8(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, \
    a7) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 8, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7))
#define AM_RequestXferAsync9(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, \
    a7, a8) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 9, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8))
#define AM_RequestXferAsync10(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, \
    a7, a8, a9) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 10, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8), (int32_t)(a9))
#define AM_RequestXferAsync11(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, \
    a7, a8, a9, a10) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 11, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10))
#define AM_RequestXferAsync12(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, \
    a7, a8, a9, a10, a11) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 12, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11))
#define AM_RequestXferAsync13(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, \
    a7, a8, a9, a10, a11, a12) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 13, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), \
    (int32_t)(a12))
#define AM_RequestXferAsync14(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, \
    a7, a8, a9, a10, a11, a12, a13) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 14, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), \
    (int32_t)(a12), (int32_t)(a13))
#define AM_RequestXferAsync15(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, \
    a7, a8, a9, a10, a11, a12, a13, a14) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 15, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), \
    (int32_t)(a12), (int32_t)(a13), (int32_t)(a14))
#define AM_RequestXferAsync16(ep, destep, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, \
    a7, a8, a9, a10, a11, a12, a13, a14, a15) \
  ramp_RequestXfer((ep), (destep), (hnum), (sa), (cnt), (desto), 1, 16, (int32_t)(a0), \
    (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), \
    (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), \
    (int32_t)(a12), (int32_t)(a13), (int32_t)(a14), (int32_t)(a15))

/* AM_ReplyM */
#define AM_Reply0(token, hnum) \
  ramp_Reply((token), (hnum), 0)
#define AM_Reply1(token, hnum, a0) \
  ramp_Reply((token), (hnum), 1, (int32_t)(a0))
#define AM_Reply2(token, hnum, a0, a1) \
  ramp_Reply((token), (hnum), 2, (int32_t)(a0), (int32_t)(a1))
#define AM_Reply3(token, hnum, a0, a1, a2) \
  ramp_Reply((token), (hnum), 3, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2))
#define AM_Reply4(token, hnum, a0, a1, a2, a3) \
  ramp_Reply((token), (hnum), 4, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3))
#define AM_Reply5(token, hnum, a0, a1, a2, a3, a4) \
  ramp_Reply((token), (hnum), 5, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), \
    (int32_t)(a4))
#define AM_Reply6(token, hnum, a0, a1, a2, a3, a4, a5) \
  ramp_Reply((token), (hnum), 6, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), \
    (int32_t)(a4), (int32_t)(a5))
#define AM_Reply7(token, hnum, a0, a1, a2, a3, a4, a5, a6) \
  ramp_Reply((token), (hnum), 7, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), \
    (int32_t)(a4), (int32_t)(a5), (int32_t)(a6))
#define AM_Reply8(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7) \
  ramp_Reply((token), (hnum), 8, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), \
    (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7))
#define AM_Reply9(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8) \
  ramp_Reply((token), (hnum), 9, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), \
    (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8))
#define AM_Reply10(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
  ramp_Reply((token), (hnum), 10, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), \
    (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9))
#define AM_Reply11(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) \
  ramp_Reply((token), (hnum), 11, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), \
    (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), \
    (int32_t)(a10))
#define AM_Reply12(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11) \
  ramp_Reply((token), (hnum), 12, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), \
    (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), \
    (int32_t)(a10), (int32_t)(a11))
#define AM_Reply13(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12) \
  ramp_Reply((token), (hnum), 13, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), \
    (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), \
    (int32_t)(a10), (int32_t)(a11), (int32_t)(a12))
#define AM_Reply14(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13) \
  ramp_Reply((token), (hnum), 14, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), \
    (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), \
    (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13))
#define AM_Reply15(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, \
    a14) \
  ramp_Reply((token), (hnum), 15, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), \
    (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), \
    (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14))
#define AM_Reply16(token, hnum, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, \
    a14, a15) \
  ramp_Reply((token), (hnum), 16, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), (int32_t)(a3), \
    (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), (int32_t)(a9), \
    (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), (int32_t)(a14), \
    (int32_t)(a15))

/* AM_ReplyIM */
#define AM_ReplyI0(token, hnum, sa, cnt) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 0)
#define AM_ReplyI1(token, hnum, sa, cnt, a0) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 1, (int32_t)(a0))
#define AM_ReplyI2(token, hnum, sa, cnt, a0, a1) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 2, (int32_t)(a0), (int32_t)(a1))
#define AM_ReplyI3(token, hnum, sa, cnt, a0, a1, a2) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 3, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2))
#define AM_ReplyI4(token, hnum, sa, cnt, a0, a1, a2, a3) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 4, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3))
#define AM_ReplyI5(token, hnum, sa, cnt, a0, a1, a2, a3, a4) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 5, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4))
#define AM_ReplyI6(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 6, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5))
#define AM_ReplyI7(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 7, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6))
#define AM_ReplyI8(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 8, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7))
#define AM_ReplyI9(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 9, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8))
#define AM_ReplyI10(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 10, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), \
    (int32_t)(a9))
#define AM_ReplyI11(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 11, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), \
    (int32_t)(a9), (int32_t)(a10))
#define AM_ReplyI12(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 12, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), \
    (int32_t)(a9), (int32_t)(a10), (int32_t)(a11))
#define AM_ReplyI13(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, \
    a12) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 13, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), \
    (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12))
#define AM_ReplyI14(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, \
    a12, a13) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 14, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), \
    (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13))
#define AM_ReplyI15(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, \
    a12, a13, a14) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 15, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), \
    (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), \
    (int32_t)(a14))
#define AM_ReplyI16(token, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, \
    a12, a13, a14, a15) \
  ramp_ReplyI((token), (hnum), (sa), (cnt), 16, (int32_t)(a0), (int32_t)(a1), (int32_t)(a2), \
    (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), (int32_t)(a8), \
    (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), (int32_t)(a13), \
    (int32_t)(a14), (int32_t)(a15))

/* AM_ReplyXferM */
#define AM_ReplyXfer0(token, desto, hnum, sa, cnt) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 0)
#define AM_ReplyXfer1(token, desto, hnum, sa, cnt, a0) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 1, (int32_t)(a0))
#define AM_ReplyXfer2(token, desto, hnum, sa, cnt, a0, a1) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 2, (int32_t)(a0), (int32_t)(a1))
#define AM_ReplyXfer3(token, desto, hnum, sa, cnt, a0, a1, a2) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 3, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2))
#define AM_ReplyXfer4(token, desto, hnum, sa, cnt, a0, a1, a2, a3) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 4, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3))
#define AM_ReplyXfer5(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 5, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4))
#define AM_ReplyXfer6(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 6, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5))
#define AM_ReplyXfer7(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 7, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6))
#define AM_ReplyXfer8(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 8, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7))
#define AM_ReplyXfer9(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 9, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8))
#define AM_ReplyXfer10(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 10, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8), (int32_t)(a9))
#define AM_ReplyXfer11(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, \
    a10) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 11, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8), (int32_t)(a9), (int32_t)(a10))
#define AM_ReplyXfer12(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, \
    a10, a11) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 12, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11))
#define AM_ReplyXfer13(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, \
    a10, a11, a12) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 13, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12))
#define AM_ReplyXfer14(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, \
    a10, a11, a12, a13) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 14, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), \
    (int32_t)(a13))
#define AM_ReplyXfer15(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, \
    a10, a11, a12, a13, a14) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 15, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), \
    (int32_t)(a13), (int32_t)(a14))
#define AM_ReplyXfer16(token, desto, hnum, sa, cnt, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, \
    a10, a11, a12, a13, a14, a15) \
  ramp_ReplyXfer((token), (hnum), (sa), (cnt), (desto), 16, (int32_t)(a0), (int32_t)(a1), \
    (int32_t)(a2), (int32_t)(a3), (int32_t)(a4), (int32_t)(a5), (int32_t)(a6), (int32_t)(a7), \
    (int32_t)(a8), (int32_t)(a9), (int32_t)(a10), (int32_t)(a11), (int32_t)(a12), \
    (int32_t)(a13), (int32_t)(a14), (int32_t)(a15))

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RAMP_AM_H */
