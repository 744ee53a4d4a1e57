/*
 * ramp.h -- ramp's extensions to the AM-2 API (includes <am.h>).
 *
 * Versioning: RAMP_VERSION_* follow the crate version in Cargo.toml (checked by
 * c-tests/check_headers.py).  RAMP_ABI_VERSION is the soname number of libramp.so
 * (libramp.so.RAMP_ABI_VERSION); it changes only when the ABI breaks.
 *
 * Every function returns an AM_* code unless noted; bad arguments give
 * AM_ERR_BAD_ARG, never a crash (among them a buffer or array whose range wraps
 * around the address space, and a pointer misaligned for its type).  Token arguments are valid only inside the handler
 * that received them.  Latencies and round-trip times are in nanoseconds.
 *
 * After an internal error (a panic inside ramp, reported on stderr as "ramp: internal
 * error (panic) in NAME"), a function returning an AM_* code returns AM_ERR_RESOURCE,
 * ramp_DumpStatistics returns NULL, ramp_enEqual 0, and the never-NULL name functions
 * a fallback name (ramp_ErrorName "AM_ERR_UNKNOWN", ramp_StatusName "EUNKNOWN").
 */
#ifndef RAMP_RAMP_H
#define RAMP_RAMP_H

#include "am.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------
 * Version
 * ---------------------------------------------------------------------------------- */

#define RAMP_VERSION_MAJOR  0
#define RAMP_VERSION_MINOR  1
#define RAMP_VERSION_PATCH  0
/* MAJOR*10000 + MINOR*100 + PATCH, for #if comparisons */
#define RAMP_VERSION \
  ((RAMP_VERSION_MAJOR) * 10000 + (RAMP_VERSION_MINOR) * 100 + (RAMP_VERSION_PATCH))
#define RAMP_VERSION_STRING "0.1.0"
/* ABI version: the soname is libramp.so.RAMP_ABI_VERSION */
#define RAMP_ABI_VERSION    0

/* ------------------------------------------------------------------------------------
 * Types
 * ---------------------------------------------------------------------------------- */

/* Message category; also the index of the [3] arrays in ramp_stats_t. */
typedef enum {
  ramp_Short = 0,         /* short: arguments only */
  ramp_Medium = 1,        /* medium: payload in a library buffer (AM_RequestIM/AM_ReplyIM) */
  ramp_Long = 2,          /* long: payload written into the segment (Xfer) */
  ramp_NumCategories = 3
} ramp_category_t;

/* Per-endpoint statistics.  All counters are uint64_t; arrays are indexed by
 * ramp_category_t.  The first block has the layout of AMUDP's amudp_stats_t (except
 * that latencies are nanoseconds, not CPU ticks); the second block is ramp's. */
typedef struct ramp_stats {
  uint64_t RequestsSent[3], RepliesSent[3], RequestsRetransmitted[3], RepliesRetransmitted[3],
           RepliesSquashed[3], RequestsReceived[3], RepliesReceived[3];
           /* Received counts include retransmits */
  uint64_t ReturnedMessages, OutOfOrderRequests, OutOfOrderReplies;
  uint64_t RequestMinLatency, RequestMaxLatency, RequestSumLatency;
           /* nanoseconds, request sent -> reply received */
  uint64_t RequestDataBytesSent[3], ReplyDataBytesSent[3], RequestTotalBytesSent[3],
           ReplyTotalBytesSent[3];  /* bytes: payload only / payload + headers */
  uint64_t TotalBytesSent;           /* bytes, all packets */
  /* ramp extensions */
  uint64_t RequestLatencySamples;    /* number of samples summed in RequestSumLatency */
  uint64_t PacketsSent, PacketsReceived, PacketsRetransmitted;
  uint64_t AcksSent, AcksReceived, NacksSent, NacksReceived;
  uint64_t DuplicatesDropped, CorruptDropped, StaleDropped;
  uint64_t RttMinNs, RttMaxNs, RttSumNs, RttSamples;  /* round-trip time, nanoseconds */
  uint64_t CcReductions, CcRandomLosses, CcTimeouts, CcUndone, CcPaced;
           /* congestion control: windows reduced for congestion, losses taken as random,
              collapses by a timeout, of them undone (spurious), pacing holds */
} ramp_stats_t;

/* ------------------------------------------------------------------------------------
 * Message interrogation extensions (token: valid only inside its handler)
 * ---------------------------------------------------------------------------------- */

/* Stores the sender's translation-table index at the receiver in *srcid. */
int ramp_GetSourceId(void *token, int *srcid);
/* Reports the message's handler index, category, and *is_req non-zero for a request, 0 for a reply. */
int ramp_GetTokenInfo(void *token, handler_t *handler, ramp_category_t *cat, int *is_req);
/* Reports how many arguments (0..16) the message carries (bindings whose handlers have a
 * fixed arity check it). */
int ramp_GetTokenArgCount(void *token, int *nargs);
/* Reports the endpoint's own name (what AM_AllocateEndpoint returned). */
int ramp_GetEndpointName(ep_t ea, en_t *name);

/* ------------------------------------------------------------------------------------
 * Endpoint names and translation tags
 * ---------------------------------------------------------------------------------- */

/* Returns non-zero when the two endpoint names are equal, 0 otherwise (not an AM_* code). */
int ramp_enEqual(en_t a, en_t b);
/* Writes name as "127.0.0.1:4000" or "[::1]:4000" into buf[len]; AM_ERR_BAD_ARG if it does not fit. */
int ramp_enToString(en_t name, char *buf, size_t len);
/* Changes the tag of mapped entry `index`; legal also after AM_SetExpectedResources. */
int ramp_SetTranslationTag(ep_t ea, int index, tag_t tag);

/* ------------------------------------------------------------------------------------
 * Diagnostics (returned strings are static; never free them)
 * ---------------------------------------------------------------------------------- */

/* Returns the name of an AM_* return code ("AM_ERR_BAD_ARG"); never NULL. */
const char *ramp_ErrorName(int code);
/* Returns the name of an E* handler-0 status code ("EBADTAG"); never NULL. */
const char *ramp_StatusName(int status);
/* Returns the library's version string, e.g. "0.1.0" (compare with RAMP_VERSION_STRING). */
const char *ramp_Version(void);
/* Returns why the calling thread's last failing ramp call failed, e.g.
 * "AM_Request1 returned AM_ERR_BAD_ARG: medium payload larger than AM_MaxMedium()",
 * or "" if none failed yet; never NULL. Per thread, like errno: a successful call
 * leaves it as it was; the text stays valid until the thread's next failing call.
 * RAMP_VERBOSE=1 prints the same text on stderr as each call fails. */
const char *ramp_LastError(void);

/* ------------------------------------------------------------------------------------
 * Statistics
 * ---------------------------------------------------------------------------------- */

/* Copies the endpoint's counters into *stats. */
int ramp_GetEndpointStatistics(ep_t ep, ramp_stats_t *stats);
/* Resets the endpoint's counters to ramp_initial_stats. */
int ramp_ResetEndpointStatistics(ep_t ep);
/* Adds newvalues into runningsum (min/max for the Min/Max fields). */
int ramp_AggregateStatistics(ramp_stats_t *runningsum, const ramp_stats_t *newvalues);
/* Formats stats (globalAnalysis != 0 adds loss analysis) into a static buffer reused by the next call, writes it to fp (a FILE *, or NULL), returns it (NULL when stats is NULL). */
const char *ramp_DumpStatistics(void *fp, const ramp_stats_t *stats, int globalAnalysis);
/* Identity for ramp_AggregateStatistics: all zero except RequestMinLatency = RttMinNs = UINT64_MAX. */
extern const ramp_stats_t ramp_initial_stats;

/* ------------------------------------------------------------------------------------
 * Argument-vector send functions (what the variadic ramp_Request* / ramp_Reply* and the
 * AM-2 macros forward to; usable directly from bindings that cannot call varargs).
 * category: 0 = short (source_addr, nbytes, dest_offset ignored: pass NULL, 0, 0),
 * 1 = medium, 2 = long.  async matters only for long requests.  numargs: 0..16.
 * ---------------------------------------------------------------------------------- */

/* Sends a request of `category` to translation index dest with args[0..numargs-1]. */
int ramp_RequestArgv(ep_t ep, uint32_t dest, handler_t handler, int category,
                     const void *source_addr, size_t nbytes, uintptr_t dest_offset,
                     int async, int numargs, const int32_t *args);
/* Sends the message whose handler holds `token` back to its sender instead of
 * handling it: the sender's handler 0 runs with `status` (an E* code of am.h, e.g.
 * EBADARGS when the message carries another number of arguments than the handler
 * takes), the message's opcode and its header and arguments intact; a request's
 * credit comes back and no automatic reply follows. AM_ERR_BAD_ARG for a status that
 * is not an E* code or a token that is not live; AM_ERR_RESOURCE for a request already
 * replied to, a returned message, or a message the endpoint sent itself. */
int ramp_ReturnMessage(void *token, int status);
/* Sends a reply of `category` from inside a request handler with args[0..numargs-1]. */
int ramp_ReplyArgv(void *token, handler_t handler, int category,
                   const void *source_addr, size_t nbytes, uintptr_t dest_offset,
                   int numargs, const int32_t *args);

/* ------------------------------------------------------------------------------------
 * Remote memory: one-sided put / get / notify
 *
 * An endpoint exposes memory regions; a peer puts bytes into them and gets bytes out
 * of them without any handler running at the target.  Region ids are chosen by the
 * owner (ramp_RegisterRegion; never 0, never reused while the endpoint lives) and
 * learned by peers from the program (an AM message, an all-gather).  Region 0
 * (RAMP_SEGMENT) always means the endpoint's AM-2 segment (AM_SetSeg), readable and
 * writable.
 *
 * Completion is remote: a put completes when its bytes are in the target's memory, a
 * get when its bytes are in dst.  Then ramp_Test sets *done = 1 and *status, or
 * ramp_Wait returns with *status: 0, or
 *   EBADSEGOFF    no such region at the target, no access right (a put into a
 *                 region without RAMP_REGION_WRITE, a get from one without
 *                 RAMP_REGION_READ), or offset/length (or the flag word) outside it:
 *                 checked at the target for the whole operation, nothing is written;
 *   EBADTAG       the target's tag refuses the translation entry's tag;
 *   EBADENDPOINT  the target has not mapped the initiator;
 *   EUNREACHABLE  the peer is dead (RAMP_PEER_TIMEOUT_MS).
 * A handle is released by the call that reports its completion (later calls with it
 * return AM_ERR_BAD_ARG).  `op` may be NULL: then only ramp_Fence waits for it.
 *
 * Sizes: any nbytes up to the region's size (not limited by AM_MaxLong).  Large
 * operations travel in chunks of 255 KiB, several in flight at once.
 *
 * Progress: the target performs puts and gets whenever its endpoint makes progress:
 * in AM_Poll, in any call that polls (requests, AM_WaitSema, ramp_Wait, ...), or
 * continuously while the bundle's progress thread is on (ramp_SetProgressThread or
 * RAMP_PROGRESS_THREAD=1).  AM handlers still run only in the application's own
 * AM_Poll / AM_WaitSema / request calls.  Every call here that waits makes progress
 * (handlers may run inside it, as in AM_Poll).  Flow control: AM messages received
 * ahead of the application's poll wait in order (up to the receive depth; beyond it the
 * sender is refused and retries), and a put or get behind them waits too; a target
 * whose answers to a peer back up (a peer that does not take its get data) performs
 * nothing more until they drain, so what it holds for a peer stays bounded.
 *
 * Ordering: a put or get that an endpoint issues to a peer is performed at the target
 * before any AM request the same endpoint sends later to the same peer runs its
 * handler ("put, then tell with an AM" is correct without waiting for the put).
 * Nothing else is promised between puts and gets: two puts to overlapping memory may
 * land in either order, and a get may or may not see an earlier put that has not
 * completed.
 *
 * Deregistration: once ramp_DeregisterRegion returns, no put or get touches the
 * region's memory again; operations arriving later are refused with EBADSEGOFF.
 * ---------------------------------------------------------------------------------- */

typedef uint64_t ramp_op_t;       /* handle of one put or get; 0 is never a handle */
typedef uint32_t ramp_region_t;   /* a memory region of an endpoint */
#define RAMP_SEGMENT      0u      /* region 0: the endpoint's AM-2 segment (AM_SetSeg) */
#define RAMP_REGION_READ  1u      /* peers may get from the region */
#define RAMP_REGION_WRITE 2u      /* peers may put into the region */

/* Registers [base, base+len) with access RAMP_REGION_READ and/or RAMP_REGION_WRITE;
 * stores its id in *region.  The memory must stay valid until deregistered.
 * AM_ERR_BAD_ARG for NULL base or region, len 0, or other access bits. */
int ramp_RegisterRegion(ep_t ep, void *base, size_t len, unsigned access, ramp_region_t *region);
/* ramp allocates len bytes (rounded up to pages), zeroed, registers them as a region
 * with `access` and returns their address in *base and the region in *region: the
 * same semantics as ramp_RegisterRegion on that memory, plus same-host peers may map
 * it and put or get with one memcpy (no descriptor, no system call).  A put through
 * the mapping is complete (its bytes, then its flag word, in the region) when the call
 * returns.  ramp_DeregisterRegion frees it: the address is invalid after it returns,
 * and peers can no longer reach the memory (a get through the mapping that races the
 * deregistration is refused with EBADSEGOFF, though bytes of the region may have
 * come into its dst).  AM_ERR_BAD_ARG for NULL base or region,
 * len 0 or too large (above 2^40), or other access bits; AM_ERR_RESOURCE when the
 * memory cannot be had. */
int ramp_AllocRegion(ep_t ep, size_t len, unsigned access, void **base, ramp_region_t *region);
/* ramp allocates len bytes (rounded up to pages), zeroed, and makes them the endpoint's
 * AM-2 segment, as AM_SetSeg(ep, *base, len) would (AM_GetSeg returns them; long
 * requests and puts and gets to region 0 reach them).  Same-host peers may map the
 * memory: their long requests (AM_RequestXfer*, AM_RequestLong*) of 16 KiB or more are
 * then one memcpy by the sender into the segment, and the handler runs here with buf
 * pointing at the bytes in place.  Such a request is sent only when no earlier
 * request of that sender to this endpoint is unanswered (AM-2 order: an earlier
 * handler does not see its bytes; AM_RequestXferAsync then says AM_ERR_IN_USE).  Its bytes
 * are in the segment before the request arrives: one refused here for another reason
 * (no such handler, a tag no longer accepted) leaves them there, where a chunked one's
 * would not have been written.  Replacing the segment (AM_SetSeg, or another
 * ramp_AllocSegment) frees this memory: the address is invalid after that call returns,
 * nothing is written into it afterwards, and a request whose bytes went into it and
 * arrives later is refused with EBADSEGOFF (returned to the sender's handler 0).
 * AM_ERR_BAD_ARG for NULL base, len 0 or too large (above 2^40); AM_ERR_RESOURCE when
 * the memory cannot be had. */
int ramp_AllocSegment(ep_t ep, uintptr_t len, void **base);
/* Deregisters a region (AM_ERR_BAD_ARG for region 0 or an unknown id). */
int ramp_DeregisterRegion(ep_t ep, ramp_region_t region);

/* Puts nbytes from src at `offset` of region `region` of translation index dest.
 * Returns once src may be reused; *op (when op is not NULL) is the handle.  Over the
 * network a large put waits (making progress) while earlier chunks to the peer wait for
 * the window, so that it holds about one chunk beyond what is in flight (not inside a
 * handler: there everything is queued at once). */
int ramp_Put(ep_t ep, uint32_t dest, ramp_region_t region, uint64_t offset,
             const void *src, size_t nbytes, ramp_op_t *op);
/* A put that then writes the 32-bit word at flag_offset of the same region to
 * flag_value, after every byte of the put is visible at the target (the target waits
 * with ramp_WaitFlag or reads the word itself). */
int ramp_PutNotify(ep_t ep, uint32_t dest, ramp_region_t region, uint64_t offset,
                   const void *src, size_t nbytes,
                   uint64_t flag_offset, uint32_t flag_value, ramp_op_t *op);
/* Gets nbytes from `offset` of region `region` of dest into dst, which must stay
 * valid until the operation completes. */
int ramp_Get(ep_t ep, uint32_t dest, ramp_region_t region, uint64_t offset,
             void *dst, size_t nbytes, ramp_op_t *op);

/* Makes progress, then sets *done to 1 and *status when op has completed (releasing
 * the handle), else *done to 0 (and *status to 0). */
int ramp_Test(ep_t ep, ramp_op_t op, int *done, int *status);
/* Waits (polling) until op completes; stores its status; releases the handle. */
int ramp_Wait(ep_t ep, ramp_op_t op, int *status);
/* Waits for every put and get the endpoint has issued so far: AM_OK if all of them
 * succeeded, AM_ERR_RESOURCE if one failed whose failure has not been reported yet
 * (by an earlier ramp_Fence, or by ramp_Test / ramp_Wait for one with a handle; a
 * failed operation with a handle still reports its own status through them). */
int ramp_Fence(ep_t ep);
/* Polls ep until *flag == value (flag: a uint32_t-aligned word, e.g. a put's
 * notification word in a region of ep). */
int ramp_WaitFlag(ep_t ep, const volatile uint32_t *flag, uint32_t value);
/* Starts (on != 0) or stops the bundle's progress thread: it moves the bundle's
 * packets and performs remote puts and gets while the program computes, never runs a
 * handler, sleeps in poll() between datagrams, and stops with AM_FreeBundle and
 * AM_Terminate.  RAMP_PROGRESS_THREAD=1 starts one for every bundle.  With it on, a
 * thread that waits in AM_WaitSema may see messages up to ~0.1 s late. */
int ramp_SetProgressThread(eb_t bundle, int on);

/* ---- names ---- */
/* ------------------------------------------------------------------------------------
 * Names (ramp-ext.md section 2): handler names, and endpoint names published job-wide.
 * ---------------------------------------------------------------------------------- */

/* Names the handler installed at index `handler` of ep: 1..63 bytes of printable ASCII
 * (space to '~'), NUL-terminated. A name names one handler: naming another handler with
 * it moves it; a handler's new name replaces its old one; the name stays with the index
 * when AM_SetHandler installs another function there. AM_ERR_BAD_ARG for a bad name or
 * a handler that is not installed. Name handlers before peers look them up. */
int ramp_SetHandlerName(ep_t ep, handler_t handler, const char *name);
/* Asks the peer at translation index dest for the index of its handler named `name`
 * (so processes that installed handlers in different orders still talk) and writes it
 * to *handler. One round trip of internal messages that run no user handler and take
 * no credit, after AM_SetExpectedResources on both sides; the answer is cached per
 * peer, and the cache is dropped when the peer restarts (a new association). A name
 * the peer moves to another handler while it lives is not noticed: the cache keeps
 * the old index. Waits making progress (handlers may run, as in AM_Poll) until the
 * answer comes; the peer must poll to answer. Returns AM_ERR_BAD_ARG when the peer has
 * no handler of that name (never cached), for a bad name or an unmapped dest;
 * AM_ERR_RESOURCE when the peer refuses (we are not in its translation table, or its
 * tag does not accept ours), is unreachable, or has not answered within
 * RAMP_PEER_TIMEOUT_MS plus one second; AM_ERR_NOT_INIT before
 * AM_SetExpectedResources. dest may be ep itself (its own table, no message). */
int ramp_LookupHandler(ep_t ep, uint32_t dest, const char *name, handler_t *handler);
/* Publishes ep's endpoint name under `service` for the whole job. A service is 1..48
 * characters of A-Z a-z 0-9 . _ - (else AM_ERR_BAD_ARG), published once per job: a
 * second publish of it, by any rank, is AM_ERR_RESOURCE and the first name stays.
 * The same under every launcher (ramp-run, mpiexec PMI-1/PMI-2, srun --mpi=pmi2 or
 * pmix, Open MPI's mpirun), with no barrier or fence needed: names are kept by the
 * job's ranks, each service by one rank (its owner: the FNV-1a hash of the service
 * string modulo the job size), and publish and look-up are internal ramp messages to
 * that rank between the job's endpoints (they run no user handler and take no
 * credit). One round trip to the owner, waiting with progress (handlers may run, as
 * in AM_Poll); the owner answers whenever it polls (AM_Poll, or any call that waits).
 * AM_ERR_RESOURCE outside an SPMD job (no ramp_SPMDStartup), when the owner has no
 * room (4096 names per rank), or when it does not answer within RAMP_PEER_TIMEOUT_MS
 * plus one second (it exited). A rank keeps the names it owns while it lives: look
 * names up before the ranks end. */
int ramp_NamePublish(ep_t ep, const char *service);
/* Looks up the endpoint name published under `service` and writes it to *name: asks
 * the service's owner rank (see ramp_NamePublish), and while nothing is published
 * there asks again, after pauses growing from 1 ms to 50 ms, until the name appears
 * or timeout_ms passed (0: one question; negative: AM_ERR_BAD_ARG). So a look-up finds
 * a name published after it started, without any barrier between publish and
 * look-up. Polls the job's bundle meanwhile (handlers may run, as in AM_Poll).
 * AM_ERR_RESOURCE when nothing appeared in time, outside a job, or when the owner does
 * not answer within RAMP_PEER_TIMEOUT_MS plus one second (it exited). */
int ramp_NameLookup(const char *service, en_t *name, int timeout_ms);
/* ---- end of names ---- */

/* ---- pull-style receive ---- */
/*
 * ramp_Drain is AM_Poll for bindings that play handlers themselves (Python's
 * ctypes package uses it: no C-to-Python callback per message).  It moves packets
 * like AM_Poll and runs the same arrival checks (tags, handler table, segment
 * bounds; refusals go back to the sender's handler 0 as usual), but instead of
 * calling the handler of each admitted message it describes the message in the
 * caller's array; the caller then plays the handler itself.
 *
 * Lifetime (AM-2's rules kept): the messages one ramp_Drain hands out are *held* by
 * the calling thread until that thread's next ramp_Drain or ramp_DrainRelease:
 *  - their tokens stay valid until then: every token function works on them, and a
 *    request may be replied to once (ramp_ReplyArgv, AM_Reply*) until then; after
 *    it, the token is dead (AM_ERR_BAD_ARG, as for a handler that returned);
 *  - buf of a medium message is the library's buffer, writable, valid until then
 *    (no copy: read it in place); buf of a long message points into the segment;
 *  - a request not replied to by then gets its automatic empty reply then; to send
 *    it when its handler is done, as AM_Poll would, call ramp_DrainEnd(token) (or
 *    ramp_DrainRelease once the whole batch is played): until then the requester's
 *    credit stays taken, and a request of yours that waits for a credit (polling
 *    with AM_Poll, which does not end held messages) may wait for a peer doing the
 *    same;
 *  - no handler is running meanwhile: requests sent while messages are held poll
 *    and wait for credits as outside a handler.
 * Only the thread that drained may use the tokens.  Messages that arrive during
 * other calls (AM_Poll, AM_WaitSema, the poll inside a request, a request to the
 * endpoint itself) still go to the installed handlers.
 */

/* ramp_msg_t.flags */
#define RAMP_MSG_REQUEST  1  /* a request (its handler may reply, unless RAMP_MSG_RETURNED) */
#define RAMP_MSG_RETURNED 2  /* a message of ours returned to handler 0 (status, opcode) */

/* One delivered message (112 bytes on LP64; field offsets fixed). */
typedef struct ramp_msg {
  void *token;          /* live until this thread's next ramp_Drain / ramp_DrainRelease */
  ep_t ep;              /* the endpoint that received it */
  void *buf;            /* medium: the library's buffer; long: in the segment; else NULL */
  size_t nbytes;        /* bytes at buf */
  int32_t args[16];     /* the first nargs are the message's, the others 0 */
  int32_t source_id;    /* the sender's translation index at the receiver, -1 if none */
  int32_t status;       /* returned: the E* status handler 0 would get; else 0 */
  int32_t opcode;       /* returned: the op_t handler 0 would get; else 0 */
  handler_t handler;    /* the handler index it was sent to (also when returned) */
  uint8_t category;     /* a ramp_category_t value */
  uint8_t nargs;        /* 0..16 */
  uint8_t flags;        /* RAMP_MSG_REQUEST, RAMP_MSG_RETURNED */
} ramp_msg_t;

/* Ends the messages of this thread's last ramp_Drain, then moves packets on every
 * endpoint of eb and describes up to max delivered messages in msgs[0..max-1]
 * (handlers are not called); *count is how many (also when an error is returned).
 * AM_ERR_RESOURCE inside a running handler (use AM_Poll there); AM_ERR_BAD_ARG for
 * a NULL count, a negative max, or a NULL msgs with max > 0. */
int ramp_Drain(eb_t eb, ramp_msg_t *msgs, int max, int *count);
/* ramp_Drain, repeated (busy: the calling thread spins) while no message is
 * delivered, for up to spin_us microseconds (0..1000000): returns at the first
 * drain that hands out a message, at an error, or with *count 0 when the time is
 * up.  For a binding's wait loop: an arrival is noticed at the library's speed,
 * not at the speed of the binding's own loop.  Errors as ramp_Drain; also
 * AM_ERR_BAD_ARG for spin_us out of range. */
int ramp_DrainWait(eb_t eb, ramp_msg_t *msgs, int max, int *count, int spin_us);
/* ramp_DrainWait with its arguments in one struct, described once: for callers through
 * a foreign-function interface, which pay for each argument converted and each value
 * read back (CPython's ctypes: about 30 ns each).  ramp_DrainOn(d) does
 * ramp_DrainWait(d->eb, d->msgs, d->max, &d->count, d->spin_us) and returns the count
 * (0 or more) when that returned AM_OK, else minus its error code (-AM_ERR_BAD_ARG for
 * a NULL d too); d->count is written either way (except for a NULL d).  d->thread 0:
 * any thread may use d; else only the thread whose ramp_DrainThread() it is: any other
 * gets RAMP_DRAIN_NOT_MINE, nothing done, d untouched (a binding's cached descriptor
 * tells it that it runs on another thread, at no cost to the thread it belongs to). */
typedef struct {
  eb_t eb;
  ramp_msg_t *msgs;
  int32_t max;
  int32_t count;    /* written by the call */
  int32_t spin_us;  /* 0..1000000 */
  int32_t thread;   /* 0, or a ramp_DrainThread() */
} ramp_drain_t;
#define RAMP_DRAIN_NOT_MINE (-1000) /* below every -error code */
int ramp_DrainOn(ramp_drain_t *d);
/* The calling thread's id for ramp_drain_t.thread: above 0, never another thread's
 * (0 once 2^31 - 1 threads have had one: the field cannot be used then). */
int ramp_DrainThread(void);
/* Ends the messages of this thread's last ramp_Drain now: their tokens die and the
 * requests among them not replied to get their automatic reply.  Always AM_OK. */
int ramp_DrainRelease(void);

/* Ends one message of this thread's last ramp_Drain now, as if its handler returned:
 * its token dies and, a request not replied to, it gets its automatic reply at once
 * (its medium buffer stays valid until the next ramp_Drain / ramp_DrainRelease).
 * AM_ERR_BAD_ARG when token is not a live message of this thread's last drain. */
int ramp_DrainEnd(void *token);

/* The short reply and request with few arguments, for callers through a foreign-function
 * interface (each argument converted costs them): */
/* Short reply to message `index` (0-based) of this thread's last ramp_Drain, as
 * AM_ReplyM on its token; AM_ERR_BAD_ARG when there is no such message, or when it was
 * ended (ramp_DrainEnd) or released since; numargs 0..16. */
int ramp_DrainReply(int index, handler_t handler, int numargs, const int32_t *args);
/* Short request, as ramp_RequestArgv(ep, dest, handler, 0, NULL, 0, 0, 0, numargs, args). */
int ramp_RequestShort(ep_t ep, uint32_t dest, handler_t handler, int numargs,
                      const int32_t *args);
/* The same with one argument, passed by value (no array for the caller to fill): as
 * ramp_DrainReply(index, handler, 1, &a0) and ramp_RequestShort(ep, dest, handler, 1, &a0),
 * with the same errors. */
int ramp_DrainReply1(int index, handler_t handler, int32_t a0);
int ramp_RequestShort1(ep_t ep, uint32_t dest, handler_t handler, int32_t a0);

/* ramp_DrainRelease, ramp_DrainEnd and ramp_DrainReply1 that never wait for an endpoint
 * another thread holds (a thread that runs a handler holds its endpoint meanwhile): they
 * return AM_ERR_IN_USE then, having done nothing (nothing ended, nothing sent, the token
 * still live and unreplied).  A reply to the replying endpoint itself is always refused
 * so.  For a binding that calls them without releasing a lock of its own which its
 * handlers need (CPython's GIL): waiting for the endpoint while its holder waits for that
 * lock would never end.  On AM_ERR_IN_USE, release that lock and call the plain form.
 * Otherwise the same results and errors as the plain forms. */
int ramp_DrainTryRelease(void);
int ramp_DrainTryEnd(void *token);
int ramp_DrainTryReply1(int index, handler_t handler, int32_t a0);

/* ---- end of pull-style receive ---- */

/* ---- transactions ---- */
/* ------------------------------------------------------------------------------------
 * Transactions (ramp-ext.md section 3): requests whose progress the program can ask.
 * A transaction is a request, the target's ack when its handler starts, then the reply
 * when it is done.  The request handler runs at most once per transaction, also when the
 * request is retransmitted, duplicated or replayed: a duplicate gets the reply the target
 * kept (kept replies are freed once later requests of the initiator show they arrived;
 * at most 4096 kept transactions a peer and 64 MiB of kept replies at a target, past
 * which a new transaction is refused: RAMP_ABANDON_REFUSED with status ECONGESTION; it
 * never ran).  Plain AM-2 requests keep no state and cost what they did.
 * An ack can be lost like any datagram: the target sends it again (its protocol
 * retransmits it; a duplicate request or a probe from the initiator is answered with
 * it) only while its endpoint makes progress, so a handler that blocks for long should
 * call AM_Poll meanwhile, else the initiator sees no ack until the handler returns (or
 * gives up after RAMP_PEER_TIMEOUT_MS).  A transaction given up without an ack ends
 * RAMP_ABANDON_NOT_ACKED only when its handler cannot have started: the target's protocol
 * refused the request for want of buffer, it waited behind 64 older requests when its
 * target died or restarted, or the process the request went to answered a probe that it
 * never started it.  Otherwise (a lost ack looks like none; a request given up in the
 * network may have arrived) it ends RAMP_ABANDON_NO_REPLY with ack RAMP_ACK_NONE: the
 * handler may have run.  A transaction not acknowledged when its target restarts from its
 * log is sent again to the restarted target (its log says it never started it), so it
 * ends PROCESSED.  Transactions waiting for their answers are looked after as the
 * endpoint makes progress (AM_Poll, a request waiting for a credit, ramp_TxnWait): a
 * target that restarted or went silent is asked how far each got.
 * ---------------------------------------------------------------------------------- */
typedef uint64_t ramp_txn_t;
typedef enum { RAMP_ACK_NONE = 0, RAMP_ACK_ACKED = 1, RAMP_ACK_NACKED = 2 } ramp_ack_t;
typedef enum {
  RAMP_TXN_NOT_SENT = 0, RAMP_TXN_REQUEST_SENT = 1,
  RAMP_TXN_PROCESSING = 2, RAMP_TXN_PROCESSED = 3
} ramp_progress_t;
typedef enum {
  RAMP_ABANDON_NONE = 0,
  RAMP_ABANDON_NOT_ACKED = 1,      /* given up before any ack where it cannot have started: the handler never ran */
  RAMP_ABANDON_REFUSED = 2,        /* the target refused it (no handler, bad tag, segment): never ran */
  RAMP_ABANDON_HANDLER_TIMEOUT = 3,/* the handler started and did not finish within the bound */
  RAMP_ABANDON_NO_REPLY = 4,       /* no reply within the retries (acked, or its ack may be lost): the handler may have run */
  RAMP_ABANDON_TARGET_CRASHED = 5  /* the target restarted from its log while the handler ran: it ran at most once */
} ramp_abandon_t;
typedef struct {
  ramp_ack_t ack; ramp_progress_t progress; ramp_abandon_t abandon;
  int status;                      /* the AM-2 status code when abandoned, else 0 */
} ramp_txn_state_t;

/* ramp_RequestArgv (never asynchronous) that keeps the transaction's state until
 * ramp_TxnRelease and writes its id to *txn.  A long payload is at most AM_MaxLong() - 16
 * bytes (a transaction carries 16 bytes more).  AM_ERR_RESOURCE when 65536 transactions
 * are kept (release finished ones).  A failed or refused transaction does not call
 * handler 0: its state says where it failed. */
int ramp_RequestTxn(ep_t ep, uint32_t dest, handler_t handler, int category,
                    const void *source_addr, size_t nbytes, uintptr_t dest_offset,
                    int numargs, const int32_t *args, ramp_txn_t *txn);
/* The status of an abandoned transaction is the returned-message code (am.h): EBADHANDLER,
 * EBADTAG... when refused, EUNREACHABLE when given up in the network or past the handler
 * bound, ECONGESTION when the target had no room. */
/* The state of kept transaction txn; AM_ERR_BAD_ARG when it is not one (released, or a
 * plain request's). */
int ramp_TxnState(ep_t ep, ramp_txn_t txn, ramp_txn_state_t *state);
/* Waits, making progress (handlers may run, as in AM_Poll), until txn is PROCESSED or
 * abandoned (AM_OK) or timeout_ms passed (AM_ERR_RESOURCE; negative: no limit); writes
 * its state either way. */
int ramp_TxnWait(ep_t ep, ramp_txn_t txn, int timeout_ms, ramp_txn_state_t *state);
/* Writes the ids of up to max kept transactions whose progress is `progress` to out,
 * oldest first; *count is how many there are (it may exceed max).  An abandoned
 * transaction keeps the progress it had. */
int ramp_TxnList(ep_t ep, ramp_progress_t progress, ramp_txn_t *out, size_t max, size_t *count);
/* Forgets txn's state (an answer that comes later is dropped). */
int ramp_TxnRelease(ep_t ep, ramp_txn_t txn);
/* Bounds the time a transaction's handler may run, from its ack (microseconds; 0: no
 * bound, the default, as AM-2): past it the transaction is abandoned with
 * RAMP_ABANDON_HANDLER_TIMEOUT (checked as the endpoint makes progress, and when its
 * state is read). */
int ramp_SetHandlerTimeout(ep_t ep, uint64_t usec);
/* In handler 0, for a returned request: *may = 1 when its handler may have run at the
 * target (it was given up in the network, EUNREACHABLE, after it may have arrived: do
 * not resend it blindly, or send it as a transaction), 0 when it did not run (refused
 * by the target, or never sent, or, when its target died or restarted, it was waiting
 * behind at least 64 older requests to that target that it could not have gone ahead
 * of (a short request goes ahead of long ones not begun, am.h "Order"; a
 * target starts a handler only while fewer than 64 of its answers to the sender are
 * unacknowledged)).
 * A plain request acknowledged by its target is returned too when the target dies.
 * AM_ERR_BAD_ARG for another token. */
int ramp_ReturnedMayHaveRun(void *token, int *may);
/* Keeps ep's transactions in a memory-mapped log at path (created when missing), before
 * ep maps any peer (else AM_ERR_RESOURCE).  An existing log makes ep the endpoint it
 * names: ep binds the logged address and takes the logged protocol secret, so a restarted
 * process comes back at the same name (peers see a new handshake).  As a target ep logs
 * each transaction's ack and start before its handler runs, its end and reply before the
 * reply leaves; after a crash (kill -9) and a restart with the same path, a finished
 * transaction is never run again (a duplicate gets the logged reply) and one that had
 * started answers RAMP_ABANDON_TARGET_CRASHED.  Records are in the page cache at once
 * (they survive a process crash); RAMP_LOG_SYNC=1 msyncs each (a machine crash).  A
 * foreign, torn or inconsistent file is refused (AM_ERR_RESOURCE, the file and the
 * problem on stderr); so is a log another process has open.  RAMP_LOG_DIR=dir opens
 * dir/endpoint-N.ramplog for the process's N-th endpoint.  As an initiator ep logs each
 * ramp_RequestTxn before sending it (states are logged when read, releases at once): a
 * restarted initiator lists its unreleased transactions with ramp_TxnList and the unfinished
 * ones are sent again once their target is mapped (the target's at-most-once rule answers
 * them); their progress starts again from REQUEST_SENT. */
int ramp_LogOpen(ep_t ep, const char *path);
/* ---- end of transactions ---- */

/* ---- paths (rails) ----
 * An endpoint with several rails (RAMP_RAILS) reaches a peer by several paths: each pair
 * of one of our rails and one of the peer's addresses.  ramp_GetPeerPaths lists the paths
 * to the peer named dest (its name, as AM_Map takes it): *count is the number the peer
 * has (may be > max: then only the first max are written; paths may be NULL when max is
 * 0).  AM_ERR_BAD_ARG for a bad ep, a NULL count, a NULL or misaligned paths with max > 0,
 * a name that is no address, or a peer the endpoint has no association with (never talked
 * to, or forgotten; *count is then 0).  Addresses are endpoint names (ramp_enToString
 * prints them).  RAMP_VERBOSE prints one line when a path fails, recovers, becomes suspect,
 * is no longer suspect, when every path to a peer failed (partitioned) and when one answers
 * again (rejoined).  A suspect path (RAMP_PATH_SUSPECT) is active but carries no new data:
 * consecutive timeouts on it moved its traffic to another path; its heartbeat answered
 * makes it active again, unanswered while the peer answers elsewhere it fails (a peer off
 * the CPU for a while makes paths suspect, never failed). */
#define RAMP_PATH_UNCONFIRMED 0  /* not yet confirmed by a heartbeat: carries no data */
#define RAMP_PATH_ACTIVE      1  /* confirmed and not failed: may carry data */
#define RAMP_PATH_FAILED      2  /* failed (timeouts, or unreachable); next probe not sent */
#define RAMP_PATH_PROBING     3  /* failed, a probe outstanding */
#define RAMP_PATH_SUSPECT     4  /* active, but its timeouts moved its traffic elsewhere
                                    until its heartbeat answers */
typedef struct ramp_path {
  en_t local;            /* our rail's address */
  en_t remote;           /* the peer's address the path goes to */
  uint32_t rail;         /* our rail: 0 is the endpoint's name (RAMP_RAILS' order) */
  int state;             /* RAMP_PATH_* */
  uint64_t srtt_ns;      /* smoothed round trip, ns (0: not measured yet) */
  uint64_t cwnd;         /* congestion window, bytes */
  uint64_t rate;         /* bytes per second: the measured delivery rate where one
                            exists (several paths, this one carried data), else
                            cwnd / srtt (0 without a round trip) */
  uint64_t bytes_sent;   /* bytes of datagrams sent on it */
  uint64_t bytes_acked;  /* bytes of DATA acknowledged while it carried them */
  uint32_t errors;       /* consecutive timeouts on it now */
  uint32_t failures;     /* times it failed */
  int current;           /* 1 when the peer's packets take it now */
  uint32_t reserved;     /* zero */
} ramp_path_t;
int ramp_GetPeerPaths(ep_t ep, en_t dest, ramp_path_t *paths, size_t max, size_t *count);
/* ---- end of paths ---- */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RAMP_RAMP_H */
