#!/usr/bin/env python3
"""The package's share of a round trip, without a network: ping.py's client and server
loops with the library's drain, request and reply calls replaced by C stubs that
timestamp (CLOCK_MONOTONIC) when a drain returns and when a send is entered.

    python3 python/examples/critical_path.py [--iters N] [--runs N]

On a round trip only part of each side's work counts: what lies between a drain's
return and the next send (the work before a call that then waits, waits with it).  It
prints, as medians over the runs of each loop's mean:

  client recv: a drain's return (a pong drained) -> the wait() that drained it returned
  client send: just before ep.request(...) -> the request's C entry
  server:      a drain's return (a ping drained) -> the reply's C entry (token.reply)

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

try:
    import ramp
except ImportError:  # running from the source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import ramp
from ramp import core

STUB = r"""
#include <stdint.h>
#include <string.h>
#include <time.h>
typedef struct { void *eb; char *msgs; int32_t max, count, spin_us, reserved; } drain_t;
static char rec[112];
static int seq;
static uint64_t t_ret, sum, n;
static uint64_t now(void) {
  struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
static void since(void) { if (t_ret) { sum += now() - t_ret; n++; t_ret = 0; } }
void stub_set(const char *r) { memcpy(rec, r, 112); sum = n = 0; t_ret = 0; }
int stub_drain_on(drain_t *d) {  /* one message: the record, argument 0 counting */
  memcpy(d->msgs, rec, 112); memcpy(d->msgs + 32, &seq, 4); seq++;
  d->count = 1; t_ret = now(); return 1;
}
int stub_send(void) { since(); return 0; }    /* request, reply: the end of a span */
int stub_mark(void) { t_ret = now(); return 0; }  /* the start of the send span */
int stub_end(void) { since(); return 0; }     /* (the wait's return, client recv) */
double stub_mean(void) { return n ? (double)sum / n : 0; }
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
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        S = build(tmp)
        S.stub_mean.restype = ctypes.c_double
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
            S.stub_set(record(H_PONG, False))
            target = [0]
            until = lambda: pongs[0] >= target[0]  # noqa: E731
            for _ in range(args.iters):
                target[0] = pongs[0] + 1
                ep.wait(until)
                end()
            return S.stub_mean()

        def client_send() -> float:
            S.stub_set(record(H_PONG, False))
            for i in range(args.iters):
                mark()
                ep.request(0, H_PING, i)
            return S.stub_mean()

        def server() -> float:
            S.stub_set(record(H_PING, True))
            left = [args.iters]

            def until() -> bool:
                left[0] -= 1
                return left[0] <= 0

            ep.wait(until)
            return S.stub_mean()

        try:
            for name, fn in (
                ("client recv", client_recv),
                ("client send", client_send),
                ("server", server),
            ):
                runs = [fn() for _ in range(args.runs)]
                print(
                    "critical_path: %-11s %7.0f ns (median of %d runs: %s)"
                    % (name, statistics.median(runs), len(runs), " ".join("%.0f" % r for r in runs))
                )
        finally:
            core._don, core._rshort1, core._dreply1 = saved
            b.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
