/* Shared helpers for the ramp C tests.
 *
 * Include this header FIRST in every test: it selects the POSIX/GNU feature set that
 * -std=c11 hides (fork, socketpair, clock_gettime, ...) before any system header.
 * The tests use only the installed public headers include/am.h and include/ramp.h.
 */
#ifndef RAMP_CTEST_COMMON_H
#define RAMP_CTEST_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "am.h"
#include "ramp.h"

/* ------------------------------------------------------------------------------------ */
/* failure reporting                                                                     */

/* Label printed in front of every diagnostic, e.g. "[t_exchange rank 1]". */
extern char g_label[64];

/* Name of what the test is doing now; printed when the alarm fires. */
/* The alarm of every test (ct_init): a watchdog for a hang, far above what a run takes on
 * a loaded machine; run.sh's own timeout is above it. */
#define CT_WATCHDOG_SECS 480
extern volatile const char *g_phase;
#define PHASE(s) (g_phase = (s))

/* Print "label file:line: FAIL: <message>" and terminate the process with status 1.
 * In the parent of a pair it also kills and reaps the child. Uses _exit, so it is
 * safe to call from inside an AM handler. */
void ct_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));
/* Informational line with the label (stdout, flushed). */
void ct_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define FAIL(...) ct_fail(__FILE__, __LINE__, __VA_ARGS__)

/* CHECK(cond, fmt, ...): the format string is mandatory. */
#define CHECK(cond, ...)                                                           \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      ct_fail_cond(__FILE__, __LINE__, #cond, __VA_ARGS__);                        \
    }                                                                              \
  } while (0)
void ct_fail_cond(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));

/* AM_SAFE(call): the call must return AM_OK. */
#define AM_SAFE(call)                                                              \
  do {                                                                             \
    int am_safe_rc_ = (call);                                                      \
    if (am_safe_rc_ != AM_OK)                                                      \
      ct_fail(__FILE__, __LINE__, "%s returned %d (%s), expected AM_OK", #call,    \
              am_safe_rc_, ct_errname(am_safe_rc_));                               \
  } while (0)

/* EXPECT_RC(call, code): the call must return exactly `code`. */
#define EXPECT_RC(call, code)                                                      \
  do {                                                                             \
    int expect_rc_ = (call);                                                       \
    int expect_want_ = (code);                                                     \
    if (expect_rc_ != expect_want_)                                                \
      ct_fail(__FILE__, __LINE__, "%s returned %d (%s), expected %d (%s)", #call,  \
              expect_rc_, ct_errname(expect_rc_), expect_want_,                    \
              ct_errname(expect_want_));                                           \
  } while (0)

/* ramp_ErrorName / ramp_StatusName, but never NULL (so printf is safe). */
const char *ct_errname(int code);
const char *ct_statusname(int status);
const char *ct_opname(int opcode);

/* Install alarm(seconds) with a handler that prints the current phase and exits 3;
 * ignore SIGPIPE; make stdout line buffered. Call at the start of main. */
void ct_init(const char *testname, unsigned alarm_seconds);

/* Append a suffix to the label (e.g. " rank 1"); truncates, never overflows. */
void ct_label_suffix(const char *suffix);

/* Monotonic wall clock and process CPU clock, in seconds. */
double now_sec(void);
double cpu_sec(void);
void sleep_ms(unsigned ms);

/* An integer from the environment, or `dflt`. */
long env_long(const char *name, long dflt);

/* What the test waits for now (file:line and the message's format), printed with the
 * phase when the alarm fires. */
void ct_waiting(const char *file, int line, const char *fmt, ...);

/* Poll `eb` until `cond` holds, however long it takes: the process's alarm (ct_init) is
 * the one time limit, and it prints the phase and what was waited for. A slow machine
 * makes a working test slow, never failed. (`secs` is kept for the callers' reading: how
 * long a working run takes at most on an idle machine; it is not a limit.) */
#define POLL_UNTIL(eb, cond, secs, ...)                                            \
  do {                                                                             \
    (void)(secs);                                                                  \
    ct_waiting(__FILE__, __LINE__, __VA_ARGS__);                                   \
    while (!(cond)) {                                                              \
      AM_SAFE(AM_Poll(eb));                                                        \
    }                                                                              \
    ct_waiting(NULL, 0, NULL);                                                     \
  } while (0)

/* POLL_UNTIL for a condition that moves with `progress` (an integer expression, e.g. how
 * many handlers have run): the same wait, no limit of its own (a stall, a hang or a credit
 * leak, is caught by the alarm, which says what was waited for). */
#define POLL_UNTIL_PROGRESS(eb, cond, progress, stall_secs, ...)                   \
  do {                                                                             \
    (void)(stall_secs);                                                            \
    POLL_UNTIL(eb, cond, 0, __VA_ARGS__);                                          \
  } while (0)

/* Poll `eb` for `ms` milliseconds (lets acknowledgements and late duplicates settle). */
void poll_for_ms(eb_t eb, unsigned ms);

/* Printable endpoint name (ramp_enToString), in a rotating static buffer. */
const char *en_str(en_t name);

/* ------------------------------------------------------------------------------------ */
/* two-process harness                                                                   */

typedef struct pair {
  int rank;         /* 0 = parent, 1 = child */
  int peer;         /* 1 - rank */
  int fd;           /* this process's end of the socketpair */
  pid_t child;      /* in the parent: the child's pid */
  eb_t eb;          /* bundle polled while waiting in barriers (NULL = none yet) */
  ep_t ep;
  en_t name[2];     /* endpoint names by rank */
  tag_t tag[2];     /* endpoint tags by rank */
  int ready;        /* AM_SetExpectedResources done: barriers poll eb */
} pair_t;

/* The tag rank r uses in the standard setup (non-special, all 64 bits significant). */
tag_t pair_tag(int rank);

/* Fork into two processes connected by a socketpair. Fills rank/peer/fd/child. Must be
 * called before any endpoint is allocated. Re-arms the alarm in the child. */
void pair_fork(pair_t *p);

/* Byte exchange over the socketpair: send `n` bytes, receive `n` bytes from the peer.
 * While waiting, polls p->eb (when p->ready) so that handlers keep running. */
void pair_exchange(pair_t *p, const void *mine, void *theirs, size_t n);
/* Barrier = exchange of one byte. */
void pair_barrier(pair_t *p);
/* Same, but polls the given bundle while waiting (NULL: poll nothing). */
void pair_exchange_eb(pair_t *p, eb_t eb, const void *mine, void *theirs, size_t n);
void pair_barrier_eb(pair_t *p, eb_t eb);

/* Allocate a bundle of `type` and an endpoint in it, and exchange the endpoint names with
 * the peer: names[rank] = own, names[peer] = the peer's. */
void pair_alloc(pair_t *p, int bundle_type, eb_t *eb, ep_t *ep, en_t names[2]);

/* Standard setup: pair_fork, AM_Init, pair_alloc (into p->eb/p->ep/p->name),
 * AM_SetTag(pair_tag(rank)), AM_Map(ep, 0, name[0], tag[0]) and AM_Map(ep, 1, name[1],
 * tag[1]) (so index == rank and a request to one's own index is loopback),
 * AM_SetExpectedResources(ep, 2, depth), then `setup(p, arg)` if non-NULL (register
 * handlers, segments...), then a barrier, so no traffic arrives before setup is done. */
typedef void (*pair_setup_fn)(pair_t *p, void *arg);
void spawn_pair(pair_t *p, int bundle_type, int depth, pair_setup_fn setup, void *arg);

/* Orderly end: barrier, poll `linger_ms`, barrier. The child then calls AM_Terminate and
 * exits 0 (never returns). The parent calls AM_Terminate, waits for the child and fails
 * if it exited non-zero or died from a signal; then returns. */
void pair_finish(pair_t *p, unsigned linger_ms);

/* Print both sides' packet/retransmission counters (rank 0). When RAMP_FAULT_LOSS or
 * RAMP_FAULT_DUP is set > 0 in the environment, fail unless the counters show that
 * faults were injected and recovered from (retransmissions / dropped duplicates), so a
 * fault pass that silently injects nothing does not count as passing. Both ranks call it. */
void pair_fault_report(pair_t *p);

/* Parent only: wait for the child; returns its raw wait status. */
int pair_wait_child(pair_t *p);

#endif /* RAMP_CTEST_COMMON_H */
