#!/usr/bin/env python3
"""Put and get into a numpy segment with long messages.

    ramp-run -n 4 python3 python/examples/putget.py [--block N] [--rounds R]

Every rank registers a numpy float64 array as its endpoint's segment.  Layout (in
doubles): ``size`` put areas of BLOCK values (area r is written by rank r), then a
get area of BLOCK values.

* put: rank r writes r*1e6 + arange(BLOCK) into area r of every rank's segment with a
  long request (AM_RequestXfer), straight from its numpy array; the receiver's
  handler counts arrivals, and the data is checked in place.
* get: rank r asks rank (r+1) % size, with a short request, for the area that rank
  (r+2) % size put there; the owner answers with a long reply (AM_ReplyXfer) taken
  from a view of its segment, into the requester's get area.
* timing: R rounds of a BLOCK-value put to the next rank, for a bandwidth figure.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

try:
    import numpy as np
except ImportError:
    print("putget.py needs numpy: pip install numpy", file=sys.stderr)
    sys.exit(1)

try:
    import ramp
except ImportError:  # running from the source tree without `pip install ./python`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import ramp

H_PUT = 20  # long request: (writer rank)
H_GET = 21  # short request: (source offset, nbytes, destination offset)
H_GOT = 22  # long reply: (source rank)
H_BW = 23  # long request, timing rounds
H_BW_ACK = 24  # short reply to H_BW


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--block", type=int, default=4096, help="doubles per block")
    p.add_argument("--rounds", type=int, default=200, help="timed puts to the next rank")
    args = p.parse_args()
    B = args.block
    if B * 8 > ramp.MAX_LONG:
        print(
            "putget: --block %d is more than MAX_LONG (%d bytes)" % (B, ramp.MAX_LONG),
            file=sys.stderr,
        )
        return 2

    job = ramp.spmd.startup()
    ep, rank, size = job.endpoint, job.rank, job.size
    seg = np.zeros((size + 1) * B, dtype=np.float64)
    ep.set_segment(seg)  # used in place: long messages land in `seg`
    get_area = size * B

    puts = [0]
    got = []
    acks = [0]

    def on_put(token: ramp.Token, buf: memoryview, writer: int) -> None:
        # buf is a view of seg[writer*B : (writer+1)*B]; the data is already there
        assert np.frombuffer(buf, dtype=np.float64)[0] == writer * 1e6
        puts[0] += 1

    def on_get(token: ramp.Token, src_off: int, nbytes: int, dst_off: int) -> None:
        # reply with a view of our own segment: no copy on the Python side
        token.reply_long(
            H_GOT, memoryview(seg).cast("B")[src_off : src_off + nbytes], dst_off, rank
        )

    def on_got(token: ramp.Token, buf: memoryview, source: int) -> None:
        got.append(source)

    def on_bw(token: ramp.Token, buf: memoryview) -> None:
        token.reply(H_BW_ACK)

    def on_bw_ack(token: ramp.Token) -> None:
        acks[0] += 1

    ep.set_handler(H_PUT, on_put)
    ep.set_handler(H_GET, on_get)
    ep.set_handler(H_GOT, on_got)
    ep.set_handler(H_BW, on_bw)
    ep.set_handler(H_BW_ACK, on_bw_ack)
    job.barrier()  # every segment is registered before anyone puts

    # ---- put ---------------------------------------------------------------------------
    mine = rank * 1e6 + np.arange(B, dtype=np.float64)
    for r in range(size):
        ep.request_long(r, H_PUT, mine, rank * B * 8, rank)
    ep.wait(lambda: puts[0] == size)
    for r in range(size):
        expect = r * 1e6 + np.arange(B, dtype=np.float64)
        if not np.array_equal(seg[r * B : (r + 1) * B], expect):
            print("putget: rank %d: area %d holds the wrong values" % (rank, r))
            return 1
    job.barrier()

    # ---- get ---------------------------------------------------------------------------
    owner, wanted = (rank + 1) % size, (rank + 2) % size
    ep.request(owner, H_GET, wanted * B * 8, B * 8, get_area * 8)
    ep.wait(lambda: len(got) == 1)
    if got[0] != owner or not np.array_equal(seg[get_area:], wanted * 1e6 + np.arange(B)):
        print("putget: rank %d: get from rank %d returned the wrong values" % (rank, owner))
        return 1
    job.barrier()

    # ---- bandwidth: one rank at a time puts to the next ----------------------------------
    for turn in range(size):
        if turn == rank:
            dest = (rank + 1) % size
            t0 = time.perf_counter()
            for _ in range(args.rounds):
                ep.request_long(dest, H_BW, mine, get_area * 8)
            ep.wait(lambda: acks[0] == args.rounds)
            dt = time.perf_counter() - t0
            mb = args.rounds * B * 8 / 1e6
            print(
                "putget: rank %d OK: put %d blocks of %d doubles, got rank %d's block from rank %d; "
                "%d puts of %d KiB to rank %d: %.1f MB/s"
                % (rank, size, B, wanted, owner, args.rounds, B * 8 // 1024, dest, mb / dt)
            )
            sys.stdout.flush()
        job.barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
