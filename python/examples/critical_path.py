#!/usr/bin/env python3
"""The package's share of a round trip, without a network: ping.py's client and server
loops with the library's drain, request and reply calls replaced by C stubs that
timestamp (CLOCK_MONOTONIC) when a drain returns and when a send is entered.

    python3 python/examples/critical_path.py [--iters N] [--runs N] [--raw]

On a round trip only part of each side's work counts: what lies between a drain's
return and the next send (the work before a call that then waits, waits with it).  It
prints, as medians over the runs of each loop's median span:

  client recv: a drain's return (a pong drained) -> the wait() that drained it returned
  client send: just before ep.request(...) -> the request's C entry
  server:      a drain's return (a ping drained) -> the reply's C entry (token.reply)
  plain recv:  client recv for ping.py --plain (a loop of ep.poll(), not ep.wait())

With --raw also the same spans of raw_ping.py (the bare ctypes calls, no handler: the
floor of a ctypes layer): raw recv, raw send, raw server.

With --cycles also each side's whole work per round trip, as CPU time per message
(the thread's, which preemption does not add to): cycle client (ep.request, then
ep.wait(until)), cycle plain (ep.request, then a loop of ep.poll()), cycle server (a
wait serving pings), and with --raw the same of raw_ping.py.  With a peer that answers
at once, all of the client's cycle is on the round trip, not only its spans (the reply
is back before the client reaches its next drain).

Each includes a stub's clock read (~20 ns) and, for the first two, a ctypes call that
marks the point (~60 ns).  What a change to the package's hot path saves shows here
without the noise of two processes and a network; python/examples/ping_pair.sh measures
the real thing.  Needs a C compiler and libramp (RAMP_LIB or the usual look-up).
Reaches into ramp.core's internals: a measuring tool, not an example of use.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable

try:
    import ramp
except ImportError:  # running from the source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import ramp
from ramp import core

STUB = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
typedef struct { void *eb; char *msgs; int32_t max, count, spin_us, reserved; } drain_t;
static char rec[112];
static int seq;
static uint64_t t_ret, n, cap, *spans;
static uint64_t now(void) {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
static void since(void) {
  if (t_ret) { if (n < cap) spans[n++] = now() - t_ret; t_ret = 0; }
}
int stub_set(const char *r, int max) {
  memcpy(rec, r, 112); n = 0; t_ret = 0; free(spans);
  cap = max > 0 ? (uint64_t)max : 1; spans = malloc(cap * sizeof *spans);
  return spans != NULL;
}
int stub_drain_on(drain_t *d) {  /* one message: the record, argument 0 counting */
  memcpy(d->msgs, rec, 112); memcpy(d->msgs + 32, &seq, 4); seq++;
  d->count = 1; t_ret = now(); return 1;
}
int stub_send(void) { since(); return 0; }    /* request, reply: the end of a span */
int stub_mark(void) { t_ret = now(); return 0; }  /* the start of the send span */
int stub_end(void) { since(); return 0; }     /* (the wait's return, client recv) */
static int cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}
/* the median span: robust to the preemptions of a busy machine, which a mean is not */
double stub_median(void) {
  if (!n) return 0;
  qsort(spans, n, sizeof *spans, cmp);
  return n % 2 ? (double)spans[n / 2] : (spans[n / 2 - 1] + spans[n / 2]) / 2.0;
}
"""

H_PING, H_PONG = 1, 2


def build(tmp: str) -> ctypes.CDLL:
    src, lib = os.path.join(tmp, "stub.c"), os.path.join(tmp, "libstub.so")
    with open(src, "w") as f:
        f.write(STUB)
    subprocess.run(
        [os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", "-o", lib, src], check=True
    )
    return ctypes.CDLL(lib)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=100000, help="messages per loop")
    p.add_argument("--runs", type=int, default=3, help="loops of each kind")
    p.add_argument("--raw", action="store_true", help="also the floor's spans (raw_ping.py)")
    p.add_argument(
        "--cycles", action="store_true", help="also each side's whole work per round trip"
    )
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        S = build(tmp)
        S.stub_median.restype = ctypes.c_double
        b = ramp.Bundle()
        ep = b.allocate_endpoint()
        ep.set_expected_resources(1, 32)
        pongs = [0]

        def on_pong(tok: ramp.Token, seq: int) -> None:
            pongs[0] += 1

        def on_ping(tok: ramp.Token, seq: int) -> None:
            tok.reply(H_PONG, seq)

        ep.set_handler(H_PING, on_ping)
        ep.set_handler(H_PONG, on_pong)
        core._fast()
        call = core._int_call.__globals__["_IntCall"]
        keep = core._int_call.__globals__["_IntCallKeepGIL"]
        saved = (core._don, core._rshort1, core._dreply1)
        core._don = call(("stub_drain_on", S))
        core._rshort1 = call(("stub_send", S))
        core._dreply1 = keep(("stub_send", S))
        mark, end = keep(("stub_mark", S)), keep(("stub_end", S))

        def record(handler: int, request: bool) -> bytes:
            return core._MSG.pack(
                1, ep._handle, 0, 0, *([0] * 16), 0, 0, 0, handler, 0, 1, int(request)
            )

        def client_recv() -> float:
            S.stub_set(record(H_PONG, False), args.iters)
            target = [0]
            until = lambda: pongs[0] >= target[0]  # noqa: E731
            for _ in range(args.iters):
                target[0] = pongs[0] + 1
                ep.wait(until)
                end()
            return S.stub_median()

        def client_send() -> float:
            S.stub_set(record(H_PONG, False), args.iters)
            for i in range(args.iters):
                mark()
                ep.request(0, H_PING, i)
            return S.stub_median()

        def server() -> float:
            S.stub_set(record(H_PING, True), args.iters)
            left = [args.iters]

            def until() -> bool:
                left[0] -= 1
                return left[0] <= 0

            ep.wait(until)
            return S.stub_median()

        def plain_recv() -> float:  # ping.py --plain: a loop of ep.poll()
            S.stub_set(record(H_PONG, False), args.iters)
            for _ in range(args.iters):
                want = pongs[0] + 1
                while pongs[0] < want:
                    ep.poll()
                end()
            return S.stub_median()

        # the floor (raw_ping.py): the same spans with the bare calls and no handler
        s = core._tls.s
        s.drain_q[0] = s.drain_eb = ep._bundle._handle
        msgs, dp, eph, head = s.msgs_view, s.drain_p, ep._hp, core._MSG_HEAD.unpack_from
        don, send = core._don, core._rshort1

        def raw_recv() -> float:
            S.stub_set(record(H_PONG, False), args.iters)
            for _ in range(args.iters):
                got = False
                while not got:
                    for j in range(don(dp)):
                        if head(msgs, j * 112)[4] & 0xFF == H_PONG:
                            got = True
                end()
            return S.stub_median()

        def raw_send() -> float:
            S.stub_set(record(H_PONG, False), args.iters)
            for i in range(args.iters):
                mark()
                send(eph, 1, H_PING, i)
            return S.stub_median()

        def raw_server() -> float:
            S.stub_set(record(H_PING, True), args.iters)
            for _ in range(args.iters):
                for i in range(don(dp)):
                    r = head(msgs, i * 112)
                    if r[4] & 0xFF == H_PING:
                        send(i, H_PONG, r[2])
            return S.stub_median()

        spans = [
            ("client recv", client_recv),
            ("client send", client_send),
            ("server", server),
            ("plain recv", plain_recv),
        ]
        if args.raw:
            spans += [("raw recv", raw_recv), ("raw send", raw_send), ("raw server", raw_server)]
        def cycle(fn: "Callable[[int], None]", rec: bytes) -> Callable[[], float]:
            def run() -> float:
                S.stub_set(rec, 1)
                t0 = time.thread_time_ns()
                fn(args.iters)
                return (time.thread_time_ns() - t0) / args.iters

            return run

        def c_client(n: int) -> None:
            target = [0]
            until = lambda: pongs[0] >= target[0]  # noqa: E731
            for i in range(n):
                target[0] = pongs[0] + 1
                ep.request(0, H_PING, i)
                ep.wait(until)

        def c_plain(n: int) -> None:
            for i in range(n):
                want = pongs[0] + 1
                ep.request(0, H_PING, i)
                while pongs[0] < want:
                    ep.poll()

        def c_server(n: int) -> None:
            left = [n]

            def until() -> bool:
                left[0] -= 1
                return left[0] <= 0

            ep.wait(until)

        def c_raw_client(n: int) -> None:
            for i in range(n):
                send(eph, 1, H_PING, i)
                got = False
                while not got:
                    for j in range(don(dp)):
                        if head(msgs, j * 112)[4] & 0xFF == H_PONG:
                            got = True

        def c_raw_server(n: int) -> None:
            for _ in range(n):
                for i in range(don(dp)):
                    r = head(msgs, i * 112)
                    if r[4] & 0xFF == H_PING:
                        send(i, H_PONG, r[2])

        pong, ping = record(H_PONG, False), record(H_PING, True)
        if args.cycles:
            spans += [
                ("cycle client", cycle(c_client, pong)),
                ("cycle plain", cycle(c_plain, pong)),
                ("cycle server", cycle(c_server, ping)),
            ]
            if args.raw:
                spans += [
                    ("cycle raw client", cycle(c_raw_client, pong)),
                    ("cycle raw server", cycle(c_raw_server, ping)),
                ]
        try:
            for name, fn in spans:
                runs = [fn() for _ in range(args.runs)]
                print(
                    "critical_path: %-16s %7.0f ns (median of %d runs: %s)"
                    % (name, statistics.median(runs), len(runs), " ".join("%.0f" % r for r in runs))
                )
        finally:
            core._don, core._rshort1, core._dreply1 = saved
            b.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
