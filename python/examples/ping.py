#!/usr/bin/env python3
"""Ping-pong with timing: round-trip latency of short (and medium) active messages.

    ramp-run -n 4 python3 python/examples/ping.py [--iters N] [--warmup N] [--size BYTES]
                                                  [--plain]

Rank 0 pings every other rank in turn (rank 1, then 2, ...): a short request whose
handler replies at once; it times each round trip and prints, per peer, the median
and spread in microseconds, then the median over all peers.  With ``--size B`` it also
times medium round trips carrying B bytes each way.  The other ranks serve until
rank 0 tells them to stop.  With one process, rank 0 pings itself (loopback: the
handlers run inside the request call, no network).  Rank 0 waits for each reply with
``ep.wait(until)``; with ``--plain``, with the loop a new user writes first::

    ep.request(peer, H_PING, i)
    while pongs[0] < want:
        ep.poll()

python/examples/c/ping.c is the same program in C (same handlers, same output), to
compare the two; the ranks of one job may mix them (see by_rank.sh).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import List

try:
    import ramp
except ImportError:  # running from the source tree without `pip install ./python`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import ramp

H_PING = 1  # short request (seq)          -> H_PONG
H_PONG = 2  # short reply (seq)
H_PING_M = 3  # medium request (seq)       -> H_PONG_M, same payload back
H_PONG_M = 4  # medium reply (seq)
H_STOP = 5  # short request, no args: stop serving


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=5000, help="timed round trips per peer")
    p.add_argument("--warmup", type=int, default=500, help="untimed round trips first")
    p.add_argument("--size", type=int, default=0, help="also time medium messages of SIZE bytes")
    p.add_argument("--plain", action="store_true", help="wait for replies with a loop of ep.poll()")
    args = p.parse_args()

    job = ramp.spmd.startup()
    ep = job.endpoint
    rank, size = job.rank, job.size

    stop = [False]
    pongs = [0]

    def on_ping(token: ramp.Token, seq: int) -> None:
        token.reply(H_PONG, seq)

    def on_pong(token: ramp.Token, seq: int) -> None:
        pongs[0] += 1

    def on_ping_m(token: ramp.Token, buf: memoryview, seq: int) -> None:
        token.reply_medium(H_PONG_M, buf, seq)  # echo: read in place, copied by ramp

    def on_pong_m(token: ramp.Token, buf: memoryview, seq: int) -> None:
        pongs[0] += 1

    def on_stop(token: ramp.Token) -> None:
        stop[0] = True

    ep.set_handler(H_PING, on_ping)
    ep.set_handler(H_PONG, on_pong)
    ep.set_handler(H_PING_M, on_ping_m)
    ep.set_handler(H_PONG_M, on_pong_m)
    ep.set_handler(H_STOP, on_stop)
    job.barrier()

    if rank != 0:
        ep.wait(lambda: stop[0])  # serve: handlers run inside wait
        job.barrier()
        return 0

    peers = list(range(1, size)) or [0]
    payload = bytes(range(256)) * (args.size // 256 + 1)
    payload = payload[: args.size]
    print(
        "ping: python%s, %d rank(s), %d round trips per peer after %d warm-up%s"
        % (
            " (plain poll loop)" if args.plain else "",
            size,
            args.iters,
            args.warmup,
            ", medium %d bytes" % args.size if args.size else "",
        )
    )
    medians: List[float] = []
    wait = ep.wait
    plain = args.plain
    target = [0]

    def until() -> bool:
        return pongs[0] >= target[0]
    for peer in peers:
        kinds = [("short", None)] + ([("medium", payload)] if args.size else [])
        for kind, data in kinds:
            samples = []
            for i in range(args.warmup + args.iters):
                want = target[0] = pongs[0] + 1
                t0 = time.perf_counter_ns()
                if data is None:
                    ep.request(peer, H_PING, i)
                else:
                    ep.request_medium(peer, H_PING_M, data, i)
                if plain:
                    while pongs[0] < want:
                        ep.poll()
                elif pongs[0] < want:
                    wait(until)
                t1 = time.perf_counter_ns()
                if i >= args.warmup:
                    samples.append((t1 - t0) / 1000.0)
            samples.sort()
            med = statistics.median(samples)
            if kind == "short":
                medians.append(med)
            n = len(samples)
            print(
                "ping: rank 0 -> rank %d %-6s round trip: median %8.2f us  p10 %8.2f  p90 %8.2f  min %8.2f"
                % (peer, kind, med, samples[n // 10], samples[(9 * n) // 10], samples[0])
            )
        if peer != 0:
            ep.request(peer, H_STOP)
    print(
        "ping: %s short round-trip median %.2f us (median over %d peer(s))"
        % ("python-plain" if plain else "python", statistics.median(medians), len(medians))
    )
    st = ep.statistics()
    print(
        "ping: rank 0 sent %d short requests, %d retransmitted packets"
        % (st["RequestsSent"][0], st["PacketsRetransmitted"])
    )
    job.barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
