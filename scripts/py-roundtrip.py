"""One process, two bundles of one endpoint each (client x, server y), ITERS short
round trips in the shape of python/examples/ping.py: the instructions the Python
package costs per round trip, counted by scripts/py-callgrind.sh (run under callgrind
at two ITERS and differenced).  Not a timing: nothing here reads a clock.

    python3 scripts/py-roundtrip.py MODE ITERS

MODE (what one round trip is):
  wait   x.request(0, PING, i); y.wait(served)   [the server: its handler replies];
         x.wait(until)                           [ping.py's client]
  plain  x.request(0, PING, i); y.wait(served); while pongs < want: x.poll()
                                                  [ping.py --plain's client]
  raw    the same calls as raw_ping.py: ramp_RequestShort1, ramp_DrainOn,
         ramp_DrainReply1 through the package's raw function objects, no handler,
         token or check (the floor of a ctypes layer; the server drains with it too)
  raw-plain   raw, the client draining without spin (raw_ping.py --plain)
"""

from __future__ import annotations

import os
import sys

# this tree's package, unless py-callgrind.sh was given another (PYDIR, on PYTHONPATH)
if not os.environ.get("PY_ROUNDTRIP_NO_TREE"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import ramp  # noqa: E402
from ramp import core  # noqa: E402

H_PING, H_PONG = 1, 2
TAG = 0x5EED
WARMUP = 200


def main() -> int:
    mode, iters = sys.argv[1], int(sys.argv[2])
    bx, by = ramp.Bundle(), ramp.Bundle()
    x, y = bx.allocate_endpoint(), by.allocate_endpoint()
    for ep, peer in ((x, y), (y, x)):
        ep.tag = TAG
        ep.map(0, peer.name, TAG)
        ep.set_expected_resources(0, 16)
    pongs = [0]
    pings = [0]

    def on_ping(tok: ramp.Token, v: int) -> None:
        pings[0] += 1
        tok.reply(H_PONG, v)

    def on_pong(tok: ramp.Token, v: int) -> None:
        pongs[0] += 1

    y.set_handler(H_PING, on_ping)
    x.set_handler(H_PONG, on_pong)
    target = [0]

    def until() -> bool:
        return pongs[0] >= target[0]

    def served() -> bool:
        return pings[0] >= target[0]

    # warm-up: the first messages set the pair up, which needs both polled; after it
    # one poll of y finds each ping and one of x each pong
    for i in range(WARMUP):
        x.request(0, H_PING, i)
        while pongs[0] <= i:
            y.poll()
            x.poll()
    pongs[0] = pings[0] = 0
    if mode in ("wait", "plain"):
        wait, ywait = x.wait, y.wait
        plain = mode == "plain"
        for i in range(iters):
            want = target[0] = pongs[0] + 1
            x.request(0, H_PING, i)
            ywait(served)
            if plain:
                while pongs[0] < want:
                    x.poll()
            elif pongs[0] < want:
                wait(until)
        assert pongs[0] == iters, pongs
    elif mode in ("raw", "raw-plain"):
        core._fast()
        s = core._tls.s
        don, reply1, request1 = core._Fast.don, core._Fast.dreply1, core._Fast.rshort1
        head = core._MSG_HEAD.unpack_from
        msgs = s.msgs_view
        # the server's drain and the client's: each a ramp_drain_t of its own bundle
        sdrain = core._Poller(s, by._handle, 0)
        sdrain.i[6] = core._SPIN_CHUNK_US
        sdrain.i[7] = 0
        cdrain = core._Poller(s, bx._handle, 0)
        cdrain.i[7] = 0
        if mode == "raw":
            cdrain.i[6] = core._SPIN_CHUNK_US
        sdp, cdp, xh = sdrain.p, cdrain.p, x._hp
        for i in range(iters):
            request1(xh, 0, H_PING, i)
            got = False
            while not got:
                for j in range(don(sdp)):
                    r = head(msgs, j * 112)
                    if r[4] & 0xFF == H_PING:
                        reply1(j, H_PONG, r[2])
                        got = True
            got = False
            while not got:
                for j in range(don(cdp)):
                    if head(msgs, j * 112)[4] & 0xFF == H_PONG:
                        got = True
        core._Fast.release()
    else:
        print("py-roundtrip: unknown mode %r" % mode, file=sys.stderr)
        return 2
    x.close()
    y.close()
    bx.close()
    by.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
