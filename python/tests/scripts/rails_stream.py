"""A two-rank SPMD job streaming over the rails the job was given (RAMP_RAILS), for
tests/link_rails_langs.rs (c-tests/rails_stream.c in Python): rank 1 sends long requests
of 64 KiB, each with its sequence number in its argument and its first 4 bytes, into
rank 0's segment (one slot per credit) until the file RAILS_STREAM_STOP names exists,
then a done request with the count.  Rank 0 (which waits for every message below that
count) prints a progress line every 100 ms
("rails_stream: progress delivered=BYTES unix_ms=MS"), counts every message by its
sequence number and checks its slot; at the end "rails_stream: PASS ..." when each ran
exactly once and nothing came back (exit 0), else "rails_stream: FAIL ..." (exit 1).

    ramp-run -n 2 -x RAMP_RAILS=eth0,rail1 python3 rails_stream.py   (RAILS_STREAM_STOP set)
"""

from __future__ import annotations

import os
import struct
import sys
import time

import ramp
from ramp import spmd

H_XFER, H_DONE = 10, 11
XFER = 65536
DEPTH = 64


def main() -> int:
    stop = os.environ.get("RAILS_STREAM_STOP")
    job = spmd.startup(depth=DEPTH)
    ep, rank = job.endpoint, job.rank
    if job.size != 2 or not stop:
        print("rails_stream: a job of 2 ranks with RAILS_STREAM_STOP set", file=sys.stderr)
        spmd.exit(2)
    seg = bytearray(DEPTH * XFER)
    ep.set_segment(seg)
    returned = []
    ep.set_error_handler(lambda *a: returned.append(a))
    seen = {}
    state = {"damaged": 0, "delivered": 0, "done": None}

    def on_xfer(tok, buf: memoryview, q: int) -> None:
        at = (q % DEPTH) * XFER
        head = struct.pack("<I", q)
        if len(buf) != XFER or bytes(buf[:4]) != head or bytes(seg[at : at + 4]) != head:
            state["damaged"] += 1
            return
        seen[q] = seen.get(q, 0) + 1
        state["delivered"] += XFER

    def on_done(tok, hi: int, lo: int) -> None:
        state["done"] = (hi & 0xFFFFFFFF) << 32 | (lo & 0xFFFFFFFF)

    ep.set_handler(H_XFER, on_xfer, kind="long", nargs=1)
    ep.set_handler(H_DONE, on_done, kind="short", nargs=2)
    job.barrier()
    ok = True
    if rank == 0:
        nxt = time.time() + 0.1
        # the done request may overtake the last Xfers (another path): until it came
        # and every number below its count was seen
        while state["done"] is None or len(seen) < state["done"]:
            ep.poll()
            now = time.time()
            if now >= nxt:
                print("rails_stream: progress delivered=%d unix_ms=%d"
                      % (state["delivered"], int(now * 1000)), flush=True)
                nxt = now + 0.1
            time.sleep(0.0002)
        n = state["done"]
        once = sum(1 for q in range(n) if seen.get(q) == 1)
        more = sum(1 for c in seen.values() if c > 1)
        beyond = sum(1 for q in seen if q >= n)
        ok = once == n and more == 0 and beyond == 0 and state["damaged"] == 0 and not returned
        print("rails_stream: %s: %d messages of %d bytes sent, %d handled once, %d more than once, "
              "%d never sent, %d damaged, %d returned"
              % ("PASS" if ok else "FAIL", n, XFER, once, more, beyond, state["damaged"],
                 len(returned)), flush=True)
    else:
        payload = bytearray(XFER)
        q = 0
        while q % 16 != 0 or not os.path.exists(stop):
            payload[:4] = struct.pack("<I", q)
            ep.request_long(0, H_XFER, payload, (q % DEPTH) * XFER, q)
            q += 1
        ep.request(0, H_DONE, q >> 32, q & 0xFFFFFFFF)
        print("rails_stream: rank 1 sent %d messages" % q, flush=True)
        ok = not returned
    job.barrier()
    spmd.exit(0 if ok else 1)
    return 1


if __name__ == "__main__":
    sys.exit(main())
