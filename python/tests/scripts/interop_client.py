"""The Python side of the interoperability test (ranks 1..N-1; rank 0 runs tests/c/interop.c).

Started by test_interop.py as: ramp-run -n N by_rank.sh ./interop -- python3 interop_client.py
Exits 1 with a message on the first mismatch.
"""

from __future__ import annotations

import sys

import ramp

C_SHORT, C_SHORT16, C_MEDIUM, C_LONG, C_DONE = 10, 11, 12, 13, 14
C_SHORT_REPLY, C_MEDIUM_REPLY, C_LONG_REPLY = 40, 41, 42
PY_SHORT_REPLY, PY_SHORT16_REPLY, PY_MEDIUM_REPLY, PY_LONG_REPLY = 20, 21, 22, 23
PY_SHORT_REQ, PY_MEDIUM_REQ, PY_LONG_REQ = 30, 31, 32
UNREGISTERED = 99
SLOT = 4096


def fail(msg: str) -> None:
    print("interop_client: rank %d: %s" % (ramp.spmd.my_proc(), msg), file=sys.stderr)
    sys.exit(1)


def main() -> int:
    job = ramp.spmd.startup()
    ep, rank = job.endpoint, job.rank
    seg = bytearray(16384)
    ep.set_segment(seg)
    got = {}
    served = []

    # ---- replies to our requests (phase 1) ----
    def short_reply(tok: ramp.Token, total: int, magic: int) -> None:
        assert tok.category == ramp.Category.SHORT and not tok.is_request and tok.source_id == 0
        got["short"] = (total, magic)

    def short16_reply(tok: ramp.Token, *args: int) -> None:
        got["short16"] = args

    def medium_reply(tok: ramp.Token, buf: memoryview, seq: int) -> None:
        assert tok.category == ramp.Category.MEDIUM
        got["medium"] = (bytes(buf), seq)

    def long_reply(tok: ramp.Token, buf: memoryview, checksum: int) -> None:
        assert tok.category == ramp.Category.LONG and not tok.is_request
        got["long"] = (bytes(buf), checksum, buf.obj is not None)

    def returned(status: ramp.Status, opcode: ramp.Opcode, tok: ramp.Token) -> None:
        got["returned"] = (status, opcode, tok.handler, tok.is_request, tok.returned)

    ep.set_handler(PY_SHORT_REPLY, short_reply)
    ep.set_handler(PY_SHORT16_REPLY, short16_reply, nargs=16)
    ep.set_handler(PY_MEDIUM_REPLY, medium_reply)
    ep.set_handler(PY_LONG_REPLY, long_reply)
    ep.set_error_handler(returned)

    # ---- C's requests to us (phase 2) ----
    def short_req(tok: ramp.Token, x: int, y: int) -> None:
        assert tok.is_request and tok.source_id == 0 and x == rank
        tok.reply(C_SHORT_REPLY, x * y)
        served.append("short")

    def medium_req(tok: ramp.Token, buf: memoryview) -> None:
        assert bytes(buf) == b"abcdefghijklmnopqrstuvwxyz"
        tok.reply_medium(C_MEDIUM_REPLY, bytes(buf).upper(), len(buf))
        served.append("medium")

    def long_req(tok: ramp.Token, buf: memoryview, back_offset: int, n: int) -> None:
        assert len(buf) == n == 500
        assert seg[8192 : 8192 + 500] == bytes((i + rank) & 0xFF for i in range(500))
        tok.reply_long(C_LONG_REPLY, bytes((b + 1) & 0xFF for b in buf), back_offset, rank)
        served.append("long")

    ep.set_handler(PY_SHORT_REQ, short_req)
    ep.set_handler(PY_MEDIUM_REQ, medium_req, kind="medium")
    ep.set_handler(PY_LONG_REQ, long_req, kind="long")
    job.barrier()

    # ---- phase 1 ----
    ep.request(0, C_SHORT, rank, 2, 3)
    ep.request(0, C_SHORT16, *[i * 1000 + rank for i in range(16)])
    hello = ("hello from python rank %d" % rank).encode()
    ep.request_medium(0, C_MEDIUM, memoryview(hello), rank)
    data = bytes((i * 7 + rank) & 0xFF for i in range(1000))
    ep.request_long(0, C_LONG, data, rank * SLOT, 0, 1000)
    ep.request(0, UNREGISTERED)
    if not ep.wait(lambda: len(got) == 5, timeout=300):
        fail("phase 1: only got %s" % sorted(got))
    if got["short"] != (rank + 5, 0x5EED):
        fail("short reply %r" % (got["short"],))
    if got["short16"] != tuple(i * 1000 + rank + 1 for i in range(15)) + (-1,):
        fail("short16 reply %r" % (got["short16"],))
    if got["medium"] != (hello[::-1], rank):
        fail("medium reply %r" % (got["medium"],))
    inverted = bytes(b ^ 0xFF for b in data)
    if got["long"] != (inverted, sum(inverted), True) or seg[:1000] != inverted:
        fail("long reply %r" % (got["long"][1:],))
    if got["returned"] != (ramp.EBADHANDLER, ramp.AM_REQUEST_M, UNREGISTERED, True, True):
        fail("returned message %r" % (got["returned"],))
    ep.request(0, C_DONE)

    # ---- phase 2: C's requests are served during the barrier ----
    job.barrier()
    if sorted(served) != ["long", "medium", "short"]:
        fail("served %r" % served)
    print(
        "interop: python rank %d OK: every category both ways, returned messages both ways" % rank
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
