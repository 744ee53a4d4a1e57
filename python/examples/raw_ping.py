"""The floor of a ctypes-based Python layer: ping.py's short round trip made with the
package's raw function objects (ramp_RequestShort1, ramp_DrainOn, ramp_DrainReply1
without argtypes) and no handler, token or check: only the ctypes calls and the few
bytecodes that read a drained record.  No Python layer over these C calls can be
faster; ping_pair.sh --floor runs it beside ping.py, ping.c and c/drain_ping.c.

    ramp-run -n 2 python3 python/examples/raw_ping.py [--iters N] [--warmup N] [--plain]
                                                      [--keep-gil]

--plain: the client drains without spinning in the library (ramp_DrainOn with spin_us
0, as ep.poll() does), in a loop of its own: the floor of ping.py --plain.
--keep-gil: the request and drain calls keep the GIL (ctypes' PYTHONAPI calls), as
the reply does: what GIL-keeping forms of them would save.  Safe here only because
each process has one thread: a call that waits with the GIL held while another
thread needs it never ends (why the package keeps it only in the Try forms).

Not an example of how to use ramp (it reaches into ramp.core's internals).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

try:
    import ramp
except ImportError:  # running from the source tree
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import ramp
from ramp import core

H_PING, H_PONG, H_STOP = 1, 2, 5


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=5000)
    p.add_argument("--warmup", type=int, default=500)
    p.add_argument("--plain", action="store_true", help="drain without spinning (ep.poll())")
    p.add_argument("--keep-gil", action="store_true", help="keep the GIL in every call")
    args = p.parse_args()
    job = ramp.spmd.startup()
    ep = job.endpoint
    if job.size != 2:
        print("raw_ping: needs 2 ranks", file=sys.stderr)
        return 2
    # Drained messages never call these, but a poll outside the drain does (the
    # barrier's): a ping that reaches rank 1 during its barrier must be answered there,
    # else rank 0 waits forever (as c/drain_ping.c did with handlers that did nothing).
    pongs, stopped = [0], [False]

    def on_pong(tok: "ramp.Token", v: int) -> None:
        pongs[0] += 1

    def on_stop(tok: "ramp.Token") -> None:
        stopped[0] = True

    ep.set_handler(H_PING, lambda tok, v: tok.reply(H_PONG, v))
    ep.set_handler(H_PONG, on_pong)
    ep.set_handler(H_STOP, on_stop)
    job.barrier()
    core._fast()
    s = core._tls.s
    eph = ep._hp
    don, reply1, request1 = core._Fast.don, core._Fast.dreply1, core._Fast.rshort1
    if args.keep_gil:
        lib = core._L()
        don, reply1, request1 = (
            core._IntCallKeepGIL((name, lib))
            for name in ("ramp_DrainOn", "ramp_DrainReply1", "ramp_RequestShort1")
        )
    head = core._MSG_HEAD.unpack_from
    # the thread's ramp_drain_t (eb, its messages, 32 of them, spin 100 us): the count
    # comes back as the result (or minus an error code: none here)
    s.drain_q[0] = s.drain_eb = ep._bundle._handle
    msgs, dp = s.msgs_view, s.drain_p
    # the client's drain: spinning up to 100 us (as ep.wait()), or not at all (ep.poll())
    cdp = dp
    if args.plain:
        s.poll_q[0] = s.drain_eb
        cdp = s.poll_p
    if job.rank != 0:
        stop = stopped[0]
        while not stop:
            for i in range(don(dp)):
                r = head(msgs, i * 112)  # token, endpoint, arg 0, arg 1, kind
                kind = r[4] & 0xFF  # the handler index
                if kind == H_PING:
                    reply1(i, H_PONG, r[2])
                elif kind == H_STOP:
                    stop = True
        core._Fast.release()
        job.barrier()
        return 0
    samples = []
    perf = time.perf_counter_ns
    for i in range(args.warmup + args.iters):
        seen = pongs[0]  # a send may poll: taken before it
        t0 = perf()
        request1(eph, 1, H_PING, i)
        got = pongs[0] != seen
        while not got:
            for j in range(don(cdp)):
                if head(msgs, j * 112)[4] & 0xFF == H_PONG:
                    got = True
        t1 = perf()
        if i >= args.warmup:
            samples.append((t1 - t0) / 1000.0)
    core._Fast.release()
    ep.request(1, H_STOP)
    print(
        "ping: raw-python%s%s short round-trip median %.2f us"
        % (
            "-plain" if args.plain else "",
            "-keep-gil" if args.keep_gil else "",
            statistics.median(samples),
        )
    )
    job.barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
