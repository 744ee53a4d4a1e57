"""One-sided remote memory from Python (ramp.rma): numpy arrays as regions, sources
and destinations, used in place; refusals; fence; notify + wait_flag; ordering; the
progress thread."""

from __future__ import annotations

import ctypes

import pytest

import ramp
from ramp import rma
from conftest import TAG, ready

np = pytest.importorskip("numpy")

EBADSEGOFF = 5


def test_put_and_get_numpy_in_place(pair):
    b, x, y = pair
    ready(x, y)
    target = np.zeros(6 << 20, dtype=np.uint8)
    r = rma.register_region(y, target)
    assert r.id != rma.SEGMENT and r.nbytes == target.nbytes
    for n in (1, 64 << 10, 1 << 20, 5 << 20):
        src = (np.arange(n, dtype=np.uint32) * 2654435761 >> 7).astype(np.uint8)
        op = rma.put(x, 0, r.id, 3, src)
        assert op.wait() == 0
        # remote completion: the bytes are in the target's array, no copy in between
        assert np.array_equal(target[3 : 3 + n], src)
        out = np.empty(n, dtype=np.uint8)
        op = rma.get(x, 0, r.id, 3, out)
        assert op.wait() == 0
        assert np.array_equal(out, src)
    # typed arrays: bytes as they lie in memory
    f = np.linspace(0, 1, 1000)
    rma.put(x, 0, r.id, 8, f).wait()
    back = np.empty_like(f)
    rma.get(x, 0, r.id, 8, back).wait()
    assert np.array_equal(back, f)
    r.deregister()
    assert rma.put(x, 0, r.id, 0, b"x").wait() == EBADSEGOFF


def test_alloc_region_numpy_view_put_get_and_free(pair):
    b, x, y = pair
    ready(x, y)
    r = y.alloc_region(3 << 20)
    assert r.nbytes == 3 << 20 and r.id != rma.SEGMENT
    view = np.frombuffer(r.buffer, dtype=np.uint8)
    assert view.size == r.nbytes and not view.any()
    for n in (1, 64 << 10, 1 << 20):
        src = (np.arange(n, dtype=np.uint32) * 2654435761 >> 7).astype(np.uint8)
        assert rma.put(x, 0, r.id, 5, src).wait() == 0
        assert np.array_equal(view[5 : 5 + n], src)
        out = np.empty(n, dtype=np.uint8)
        assert rma.get(x, 0, r.id, 5, out).wait() == 0
        assert np.array_equal(out, src)
    assert rma.put(x, 0, r.id, r.nbytes - 1, b"ab").wait() == EBADSEGOFF
    # freed memory must not stay visible through a view
    with pytest.raises(ramp.BadArgError):
        r.deregister()
    del view
    r.deregister()
    assert r.buffer is None
    assert rma.put(x, 0, r.id, 0, b"x").wait() == EBADSEGOFF
    for n, access in ((0, rma.READ), (1 << 41, rma.READ), (4096, 0), (4096, 4)):
        with pytest.raises(ramp.BadArgError):
            rma.alloc_region(y, n, access)


def test_refusals_write_nothing(pair):
    b, x, y = pair
    ready(x, y)
    rw = np.zeros(4096, dtype=np.uint8)
    ro = np.zeros(4096, dtype=np.uint8)
    wo = np.zeros(4096, dtype=np.uint8)
    r_rw, r_ro = rma.register_region(y, rw), rma.register_region(y, ro, rma.READ)
    r_wo = rma.register_region(y, wo, rma.WRITE)
    data = np.full(200, 7, dtype=np.uint8)
    for region, off in ((r_rw.id, 4000), (r_rw.id, 2**64 - 300), (999, 0), (r_ro.id, 0)):
        assert rma.put(x, 0, region, off, data).wait() == EBADSEGOFF
    out = np.full(16, 0x11, dtype=np.uint8)
    assert rma.get(x, 0, r_wo.id, 0, out).wait() == EBADSEGOFF
    assert (out == 0x11).all()
    assert not rw.any() and not ro.any() and not wo.any()
    with pytest.raises(ramp.BadArgError):
        rma.put(x, 0, r_rw.id, 2**64 - 1, b"ab")
    with pytest.raises(ramp.BadArgError):
        rma.put(x, 5, r_rw.id, 0, b"ab")  # not mapped
    with pytest.raises(ramp.BadArgError):
        rma.register_region(y, rw, 0)
    with pytest.raises(TypeError):
        rma.register_region(y, b"read-only bytes")
    with pytest.raises(ramp.BadArgError):
        rma.get(x, 0, r_rw.id, -1, out)


def test_fence_and_ops_without_handles(pair):
    b, x, y = pair
    ready(x, y)
    target = np.zeros(1 << 16, dtype=np.uint8)
    r = rma.register_region(y, target)
    for i in range(50):
        assert rma.put(x, 0, r.id, i * 100, bytes([i + 1]) * 100, handle=False) is None
    outs = [np.zeros(100, dtype=np.uint8) for _ in range(10)]
    for i, o in enumerate(outs):
        rma.get(x, 0, r.id, i * 100, o, handle=False)
    rma.fence(x)
    for i in range(50):
        assert (target[i * 100 : i * 100 + 100] == i + 1).all()
    for i, o in enumerate(outs):
        assert (o == i + 1).all()
    rma.put(x, 0, r.id, 1 << 16, b"past the end", handle=False)
    with pytest.raises(ramp.ResourceError):
        rma.fence(x)
    rma.fence(x)  # reported once


def test_notify_and_wait_flag(pair):
    b, x, y = pair
    ready(x, y)
    n = 1 << 20
    target = np.zeros(n + 8, dtype=np.uint8)
    r = rma.register_region(y, target, rma.WRITE)
    src = np.arange(n, dtype=np.uint64).astype(np.uint8)
    rma.put(x, 0, r.id, 0, src, notify=(n, 0xABCD), handle=False)
    rma.wait_flag(y, target, n, 0xABCD)
    assert np.array_equal(target[:n], src)
    rma.fence(x)
    with pytest.raises(ramp.BadArgError):
        rma.wait_flag(y, target, n + 6, 1)


def test_a_put_lands_before_a_later_request_runs(pair):
    b, x, y = pair
    ready(x, y)
    target = np.zeros(4 << 20, dtype=np.uint8)
    r = rma.register_region(y, target)
    seen = []
    y.set_handler(5, lambda tok, off, n, v: seen.append(bool((target[off : off + n] == v).all())))
    for i in range(12):
        n = (300 << 10) if i % 3 == 0 else 100 + i
        off = i * (300 << 10)
        rma.put(x, 0, r.id, off, np.full(n, i + 1, dtype=np.uint8), handle=False)
        x.request(0, 5, off, n, i + 1)
    assert b.wait(lambda: len(seen) == 12, timeout=300)
    assert all(seen)
    rma.fence(x)


def test_progress_thread_serves_while_python_computes():
    with ramp.Bundle() as b0, ramp.Bundle() as b1:
        x, y = b0.allocate_endpoint(), b1.allocate_endpoint()
        for ep, peer in ((x, y), (y, x)):
            ep.tag = TAG
            ep.map(0, peer.name, TAG)
        ready(x, y)
        target = np.zeros(1 << 20, dtype=np.uint8)
        r = rma.register_region(y, target)
        rma.set_progress_thread(b1, True)
        # nobody polls b1: its progress thread performs the puts and gets
        ops = [rma.put(x, 0, r.id, i * 1000, bytes([i % 200 + 1]) * 100) for i in range(300)]
        outs = [np.zeros(100, dtype=np.uint8) for _ in range(300)]
        ops += [rma.get(x, 0, r.id, i * 1000, o) for i, o in enumerate(outs)]
        assert all(op.wait() == 0 for op in ops)
        assert all((o == i % 200 + 1).all() for i, o in enumerate(outs))
        rma.set_progress_thread(b1, False)
        r.deregister()


def test_alloc_segment_long_requests_land_in_place_and_replacement_frees(pair):
    b, x, y = pair
    seg = y.alloc_segment(3 << 20)
    assert y.segment is seg and y.segment_info == (ctypes.addressof(seg), 3 << 20)
    view = np.frombuffer(seg, dtype=np.uint8)
    assert view.size == 3 << 20 and not view.any()
    got = []

    def h(tok, buf: memoryview):
        got.append(bytes(buf))

    y.set_handler(5, h)
    ready(x, y)
    for k, n in enumerate((1, 64 << 10, 1 << 20, 1 << 20)):
        src = ((np.arange(n, dtype=np.uint32) + k) * 2654435761 >> 7).astype(np.uint8)
        x.request_long(0, 5, src, 7)
        assert b.wait(lambda: len(got) == k + 1, timeout=300)
        assert got[k] == src.tobytes() and np.array_equal(view[7 : 7 + n], src)
    # freed memory must not stay visible through a view
    with pytest.raises(ramp.BadArgError):
        y.set_segment(None)
    with pytest.raises(ramp.BadArgError):
        y.alloc_segment(4096)
    del view, seg
    seg2 = y.alloc_segment(4096)
    assert y.segment is seg2 and y.segment_info[1] == 4096
    del seg2
    y.set_segment(bytearray(16))
    assert y.segment_info[1] == 16
    for n in (0, -1, 1 << 41):
        with pytest.raises(ramp.BadArgError):
            y.alloc_segment(n)
