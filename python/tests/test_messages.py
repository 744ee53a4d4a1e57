"""Requests and replies of every category between two endpoints of one process."""

from __future__ import annotations

import array
import threading

import pytest

import ramp
from conftest import TAG, ready

try:
    import numpy as np
except ImportError:  # numpy is optional: its tests skip
    np = None

needs_numpy = pytest.mark.skipif(np is None, reason="numpy is not installed")


def test_readme_example(pair):
    b, x, y = pair
    answers = []
    y.set_handler(1, lambda tok, n: tok.reply(2, n + 1))
    x.set_handler(2, lambda tok, n: answers.append(n))
    ready(x, y)
    x.request(0, 1, 41)
    assert b.wait(lambda: answers, timeout=300)
    assert answers == [42]


@pytest.mark.parametrize("n", range(17))
def test_short_every_arity(pair, n):
    b, x, y = pair
    args = tuple([-(2**31), 2**31 - 1, 0, 1, -1, 0xFFFFFFFF, 7] * 3)[:n]
    signed = tuple(a - 2**32 if a >= 2**31 else a for a in args)
    got = []

    def req(tok, *a):
        got.append(("req", a, tok.category, tok.is_request))
        tok.reply(3, *a)

    def rep(tok, *a):
        got.append(("rep", a, tok.category, tok.is_request))

    y.set_handler(2, req, nargs=n)
    x.set_handler(3, rep, kind="short", nargs=n)
    ready(x, y)
    x.request(0, 2, *args)
    assert b.wait(lambda: len(got) == 2, timeout=300)
    assert got[0] == ("req", signed, ramp.Category.SHORT, True)
    assert got[1] == ("rep", signed, ramp.Category.SHORT, False)


def test_arity_from_signature(pair):
    b, x, y = pair
    got = []

    def three(tok, a, b, c):
        got.append((a, b, c))
        tok.reply(4)

    def zero(tok):
        got.append("zero")

    def with_default(tok, a, b=5):  # 2 positional parameters after the token
        got.append((a, b))

    y.set_handler(3, three)
    x.set_handler(4, zero)
    y.set_handler(5, with_default)
    assert y.handlers[3] == (three, "short", 3)
    assert x.handlers[4] == (zero, "short", 0)
    assert y.handlers[5] == (with_default, "short", 2)
    ready(x, y)
    x.request(0, 3, 1, 2, 3)
    x.request(0, 5, 8, 9)
    assert b.wait(lambda: len(got) == 3, timeout=300)
    assert sorted(map(str, got)) == sorted(map(str, [(1, 2, 3), "zero", (8, 9)]))


BUFFERS = {
    "bytes": lambda d: d,
    "bytearray": bytearray,
    "memoryview": lambda d: memoryview(bytearray(d)),
    "readonly memoryview": lambda d: memoryview(d),
    "memoryview slice": lambda d: memoryview(b"xx" + d + b"yy")[2:-2],
    "array": lambda d: array.array("B", d),
}


@pytest.mark.parametrize("kind", sorted(BUFFERS))
def test_medium_buffer_types(pair, kind):
    b, x, y = pair
    data = bytes(range(256)) * 4
    got = []

    def echo(tok, buf: memoryview, n):
        assert isinstance(buf, memoryview) and not buf.readonly
        got.append(bytes(buf))
        tok.reply_medium(5, buf, n)  # a memoryview of the library's buffer, read in place

    def back(tok, buf: memoryview, n):
        got.append((bytes(buf), n))

    y.set_handler(4, echo)
    x.set_handler(5, back)
    ready(x, y)
    x.request_medium(0, 4, BUFFERS[kind](data), len(data))
    assert b.wait(lambda: len(got) == 2, timeout=300)
    assert got == [data, (data, len(data))]


@needs_numpy
def test_medium_numpy(pair):
    b, x, y = pair
    got = []

    def h(tok, buf: memoryview):
        got.append(np.frombuffer(buf, dtype=np.float64).copy())  # 8-byte aligned buffer

    y.set_handler(4, h)
    ready(x, y)
    a = np.arange(1000, dtype=np.float64)
    x.request_medium(0, 4, a)  # contiguous: read in place
    x.request_medium(0, 4, a[::2])  # strided: copied into C order
    ro = np.arange(10, dtype=np.float64)
    ro.setflags(write=False)
    x.request_medium(0, 4, ro)  # read-only: read in place through PyObject_GetBuffer
    assert b.wait(lambda: len(got) == 3, timeout=300)
    assert np.array_equal(got[0], a)
    assert np.array_equal(got[1], a[::2])
    assert np.array_equal(got[2], ro)


def test_medium_sizes(pair):
    b, x, y = pair
    sizes = []
    y.set_handler(4, lambda tok, buf: sizes.append(len(buf)), kind="medium", nargs=0)
    ready(x, y)
    x.request_medium(0, 4, b"")
    x.request_medium(0, 4, None)
    x.request_medium(0, 4, bytes(ramp.MAX_MEDIUM))
    assert b.wait(lambda: len(sizes) == 3, timeout=300)
    assert sizes == [0, 0, ramp.MAX_MEDIUM]
    with pytest.raises(ramp.BadArgError) as e:
        x.request_medium(0, 4, bytes(ramp.MAX_MEDIUM + 1))
    assert e.value.code == ramp.AM_ERR_BAD_ARG and "65001" in str(e.value)
    with pytest.raises(TypeError, match="encode"):
        x.request_medium(0, 4, "text")
    with pytest.raises(TypeError, match="buffer protocol"):
        x.request_medium(0, 4, 12345)


def test_medium_view_only_valid_in_handler(pair):
    b, x, y = pair
    kept = []
    y.set_handler(4, lambda tok, buf: kept.append(buf), kind="medium", nargs=0)
    ready(x, y)
    x.request_medium(0, 4, b"abc")
    assert b.wait(lambda: kept, timeout=300)
    with pytest.raises(ValueError):
        bytes(kept[0])  # released when the handler returned


def test_long_into_bytearray_segment(pair):
    b, x, y = pair
    seg_y = bytearray(4096)
    seg_x = bytearray(1024)
    y.set_segment(seg_y)
    x.set_segment(seg_x)
    assert y.segment is seg_y
    addr, n = y.segment_info
    assert n == 4096 and addr != 0
    got = []

    def put(tok, buf: memoryview, back_off, n):
        assert tok.category == ramp.Category.LONG and tok.is_request
        got.append(bytes(buf))
        buf[0] = 0x7F  # a view of the segment itself
        tok.reply_long(6, bytes(buf).upper(), back_off, len(buf))

    def done(tok, buf: memoryview, n):
        assert tok.category == ramp.Category.LONG and not tok.is_request
        got.append((bytes(buf), n))

    y.set_handler(5, put)
    x.set_handler(6, done)
    ready(x, y)
    x.request_long(0, 5, b"hello, segment", 100, 10, 14)
    assert b.wait(lambda: len(got) == 2, timeout=300)
    assert got[0] == b"hello, segment"
    assert seg_y[100:114] == b"\x7fello, segment"
    assert got[1] == (b"\x7fELLO, SEGMENT", 14)
    assert seg_x[10:24] == b"\x7fELLO, SEGMENT"
    with pytest.raises(BufferError):
        seg_y.append(0)  # pinned while it is the segment
    y.set_segment(None)
    assert y.segment is None and y.segment_info == (0, 0)
    seg_y.append(0)


@needs_numpy
def test_long_into_numpy_segment(pair):
    b, x, y = pair
    seg = np.zeros(1000, dtype=np.float64)
    y.set_segment(seg)
    got = []

    def h(tok, buf: memoryview, first):
        got.append(np.frombuffer(buf, dtype=np.float64).copy())

    y.set_handler(5, h)
    ready(x, y)
    src = np.linspace(0.0, 1.0, 100)
    x.request_long(0, 5, src, 8 * 200, 200)
    x.request_long(0, 5, src[::-1], 0, 0)  # strided source: copied
    assert b.wait(lambda: len(got) == 2, timeout=300)
    assert np.array_equal(seg[200:300], src) and np.array_equal(got[0], src)
    assert np.array_equal(seg[:100], src[::-1])
    y.set_segment(np.zeros((10, 10), dtype=np.int32))  # any C-contiguous shape
    assert y.segment_info[1] == 400
    with pytest.raises(ValueError, match="contiguous"):
        y.set_segment(np.zeros((10, 10))[:, ::2])
    ro = np.zeros(10)
    ro.setflags(write=False)
    with pytest.raises(TypeError, match="writable"):
        y.set_segment(ro)


def test_segment_type_errors(pair):
    b, x, y = pair
    with pytest.raises(TypeError, match="writable"):
        y.set_segment(b"immutable")
    with pytest.raises(TypeError, match="buffer protocol"):
        y.set_segment(42)
    with pytest.raises(TypeError, match="read-only"):
        y.set_segment(memoryview(b"abc"))


def test_long_non_blocking():
    """block=False (AM_RequestXferAsyncM) raises InUseError instead of waiting for a credit."""
    with ramp.Bundle() as b1, ramp.Bundle() as b2:
        x, y = b1.allocate_endpoint(), b2.allocate_endpoint()
        for ep, peer in ((x, y), (y, x)):
            ep.tag = TAG
            ep.map(0, peer.name, TAG)
        y.set_segment(bytearray(64))
        n = []
        y.set_handler(5, lambda tok, buf: n.append(1), kind="long", nargs=0)
        ready(x, y, depth=1)
        x.request_long(0, 5, b"one", 0, block=False)
        with pytest.raises(ramp.InUseError) as e:
            for _ in range(100):  # y is never polled: its credit does not come back
                x.request_long(0, 5, b"two", 8, block=False)
        assert e.value.code == ramp.AM_ERR_IN_USE
        # The first message to a peer waits for the association's handshake,
        # which needs the sender to make progress too: poll both.
        assert b2.wait(lambda: b1.poll() or n, timeout=300)


def test_token_interrogation(pair):
    b, x, y = pair
    seen = {}

    def h(tok, a):
        seen["source"] = tok.source
        seen["source_id"] = tok.source_id
        seen["tag"] = tok.tag
        seen["info"] = tok.info()
        seen["handler"] = tok.handler
        seen["endpoint"] = tok.endpoint
        seen["valid"] = tok.valid
        seen["handle"] = tok.handle
        seen["returned"] = tok.returned
        seen["repr"] = repr(tok)
        seen["token"] = tok
        tok.reply(8, a)
        with pytest.raises(ramp.ResourceError):
            tok.reply(8, a)  # a request handler replies at most once

    y.set_handler(7, h)
    x.set_handler(8, lambda tok, a: seen.setdefault("reply_info", tok.info()))
    ready(x, y)
    x.request(0, 7, 1)
    assert b.wait(lambda: "reply_info" in seen, timeout=300)
    assert seen["source"] == x.name and seen["source_id"] == 0 and seen["tag"] == TAG
    assert seen["info"] == ramp.TokenInfo(7, ramp.Category.SHORT, True)
    assert seen["handler"] == 7 and seen["endpoint"] is y and seen["valid"]
    assert seen["handle"] != 0 and seen["returned"] is False and "Token 0x" in seen["repr"]
    assert seen["reply_info"] == ramp.TokenInfo(8, ramp.Category.SHORT, False)
    tok = seen["token"]
    assert not tok.valid and repr(tok) == "<ramp.Token (expired)>"
    with pytest.raises(ramp.TokenExpiredError):
        tok.reply(8, 1)
    with pytest.raises(ramp.TokenExpiredError):
        _ = tok.source


def test_reply_handler_cannot_reply(pair):
    b, x, y = pair
    y.set_handler(7, lambda tok: tok.reply(8))
    x.set_handler(8, lambda tok: tok.reply(8))
    ready(x, y)
    x.request(0, 7)
    with pytest.raises(ramp.ResourceError):
        b.wait(timeout=300)
        b.wait(timeout=1)


def test_loopback_runs_inside_request():
    with ramp.Bundle() as b:
        ep = b.allocate_endpoint()
        ep.tag = TAG
        ep.map(0, ep.name, TAG)
        got = []
        ep.set_handler(1, lambda tok, v: (got.append(("req", v)), tok.reply(2, v * 2)))
        ep.set_handler(2, lambda tok, v: got.append(("rep", v)))
        ready(ep)
        ep.request(0, 1, 21)
        assert got == [("req", 21), ("rep", 42)]  # synchronously, no poll
        with pytest.raises(ramp.BadArgError):
            ep.request_long(0, 1, b"x", 0)  # loopback long without a segment


def test_par_bundle_threads():
    with ramp.Bundle(ramp.AM_PAR) as b:
        assert b.mode == ramp.AM_PAR
        x, y = b.allocate_endpoint(), b.allocate_endpoint()
        for ep, peer in ((x, y), (y, x)):
            ep.tag = TAG
            ep.map(0, peer.name, TAG)
        lock = threading.Lock()
        count = [0]

        def on(tok, v):
            tok.reply(2, v)

        def back(tok, v):
            with lock:
                count[0] += 1

        y.set_handler(1, on)
        x.set_handler(2, back)
        ready(x, y)
        errors = []

        def worker(k):
            try:
                for i in range(200):
                    x.request(0, 1, k * 1000 + i)
                    b.poll()
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        ts = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors
        assert b.wait(lambda: count[0] == 600, timeout=300)
