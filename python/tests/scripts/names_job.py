"""An SPMD job of handler names and published names (run by test_names.py under
ramp-run): each rank installs "ping" and "pong" at its own indices, in its own order,
pings every rank through the index ramp.names.lookup_handler finds there, publishes
its endpoint name as "svc-<rank>" and looks up every rank's.  Prints "rank R names OK"."""

from __future__ import annotations

import sys

import ramp
from ramp import names, spmd


def check(cond: bool, what: str) -> None:
    if not cond:
        print("FAILED: %s" % what, file=sys.stderr)
        sys.exit(1)


def main() -> int:
    job = spmd.startup()
    rank, size, ep = job.rank, job.size, job.endpoint
    ping_at, pong_at = 10 + 17 * rank, 200 - 13 * rank
    pongs = []

    def ping(tok: ramp.Token, pong: int) -> None:
        tok.reply(pong, 1)

    def pong(tok: ramp.Token, one: int) -> None:
        pongs.append(one)

    order = [(ping_at, ping, "ping"), (pong_at, pong, "pong")]
    if rank % 2:
        order.reverse()
    for index, fn, name in order:
        ep.set_handler(index, fn)
        names.set_handler_name(ep, index, name)
    job.barrier()
    for peer in range(size):
        h = names.lookup_handler(ep, peer, "ping")
        check(h == 10 + 17 * peer, "rank %d's ping at %d" % (peer, h))
        ep.request(peer, h, pong_at)
        try:
            names.lookup_handler(ep, peer, "missing")
            check(False, "a missing name was found")
        except ramp.BadArgError:
            pass
    job.bundle.wait(lambda: len(pongs) == size, timeout=300)
    job.barrier()
    names.publish(ep, "svc-%d" % rank)
    # no barrier: a look-up waits for a name published later
    for peer in range(size):
        n = names.lookup("svc-%d" % peer, timeout_ms=10000)
        check(n == ep.translation_name(peer), "rank %d's published name" % peer)
    try:
        names.lookup("never-published", timeout_ms=100)
        check(False, "found a name never published")
    except ramp.ResourceError:
        pass
    print("rank %d names OK" % rank, flush=True)
    job.barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
