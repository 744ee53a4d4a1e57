"""Pull-style receive (ramp_Drain): Python plays the handlers of drained messages.

poll and wait drain; these tests check that AM-2's rules hold on that path: a token
dies when its handler returns, a request may be replied to once, an unreplied request
gets its automatic reply when its handler returns (not at the next poll), a poll inside
a handler leaves the batch being played intact, medium payloads are read in place.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading
import time

import pytest

import ramp
import ramp.core as core
from conftest import TAG, ready, run

try:
    import numpy as np
except ImportError:  # numpy is optional: its test skips
    np = None


def test_poll_drains_and_no_handler_is_called_back_from_c(pair):
    b, x, y = pair
    calls = []
    y.set_handler(1, lambda tok, a, c: calls.append((a, c, core._tls.s.depth)))
    ready(x, y)
    x.request(0, 1, 5, -6)
    drained = []
    real = core._don  # every drain of polls and waits: ramp_DrainOn

    def counting(*a):
        n = real(*a)  # the count, or minus an error code
        drained.append(max(n, 0))
        return n

    core._don = counting
    try:
        assert b.wait(lambda: calls, timeout=300)
    finally:
        core._don = real
    assert calls == [(5, -6, 1)]
    assert sum(drained) >= 1, "the message came through ramp_Drain"


def test_token_dies_when_the_drained_handler_returns(pair):
    b, x, y = pair
    kept = []

    def on_req(tok, n):
        assert tok.valid and tok.is_request and tok.handler == 1
        assert tok.source_id == 0 and tok.source == x.name
        tok.reply(2, n * 2)
        with pytest.raises(ramp.ResourceError):
            tok.reply(2, n)  # once only
        kept.append(tok)

    got = []
    y.set_handler(1, on_req)
    x.set_handler(2, lambda tok, n: got.append((n, tok.is_request)))
    ready(x, y)
    x.request(0, 1, 21)
    assert b.wait(lambda: got, timeout=300)
    assert got == [(42, False)]
    (tok,) = kept
    assert not tok.valid
    with pytest.raises(ramp.TokenExpiredError):
        tok.reply(2, 1)
    with pytest.raises(ramp.TokenExpiredError):
        tok.info()


def test_unreplied_request_gets_its_automatic_reply_when_the_handler_returns():
    # two bundles: after y's handler ran, only x's bundle is polled, so the automatic
    # reply must have left y when the handler returned (not at y's next drain)
    with ramp.Bundle() as bx, ramp.Bundle() as by:
        x, y = bx.allocate_endpoint(), by.allocate_endpoint()
        for ep, peer in ((x, y), (y, x)):
            ep.tag = TAG
            ep.map(0, peer.name, TAG)
        seen = []
        y.set_handler(1, lambda tok, n: seen.append(n))  # never replies
        ready(x, y, depth=1)
        # warm-up with both bundles polled: the association's handshake needs both
        x.request(0, 1, -1)
        for _ in range(100000):
            bx.poll()
            by.poll()
            if seen and x.statistics()["RequestLatencySamples"] == 1:
                break
        assert seen == [-1]
        del seen[:]
        for i in range(3):
            x.request(0, 1, i)
            assert by.wait(lambda: len(seen) == i + 1, timeout=300)
            # x's bundle moved with AM_Poll: a drain would end the thread's held
            # messages (y's too) and send the reply the handler's end should have sent
            # (this loop's polls are what brings it: no time limit of its own)
            while x.statistics()["RequestLatencySamples"] != i + 2:
                assert core._L().AM_Poll(bx.handle) == 0
        assert seen == [0, 1, 2]


def test_handler_exception_still_sends_the_automatic_reply(pair):
    b, x, y = pair
    n = [0]

    def boom(tok, v):
        n[0] += 1
        raise ValueError("boom %d" % v)

    y.set_handler(1, boom)
    ready(x, y, depth=1)
    x.request(0, 1, 1)
    with pytest.raises(ValueError, match="boom 1"):
        b.wait(lambda: n[0] == 1, timeout=300)
    x.request(0, 1, 2)  # the credit came back: the automatic reply went out
    with pytest.raises(ValueError, match="boom 2"):
        b.wait(lambda: n[0] == 2, timeout=300)


def test_poll_inside_a_drained_handler_keeps_the_batch_valid(pair):
    b, x, y = pair
    seen = []

    def on_med(tok, buf: memoryview, i):
        if i == 0:
            b.poll()  # nested: AM_Poll, handlers through the trampolines
            x.request(0, 3, 9)  # a request from inside the handler
        seen.append((i, bytes(buf)))

    inner = []
    y.set_handler(2, on_med)
    y.set_handler(3, lambda tok, v: inner.append(v))
    ready(x, y)
    for i in range(4):
        x.request_medium(0, 2, bytes([i]) * (100 + i), i)
    assert b.wait(lambda: len(seen) == 4 and inner, timeout=300)
    assert sorted(seen) == [(i, bytes([i]) * (100 + i)) for i in range(4)]
    assert inner == [9]


def test_medium_payload_is_read_in_place_and_numpy_views_it(pair):
    if np is None:
        pytest.skip("numpy is not installed")
    b, x, y = pair
    sums = []
    addrs = []

    def on_med(tok, buf: memoryview, k):
        a = np.frombuffer(buf, dtype=np.float64)  # no copy
        addrs.append(a.__array_interface__["data"][0])
        sums.append(float(a.sum()))
        a[0] = -1.0  # the library's buffer is writable
        tok.reply_medium(4, buf, k)

    echoed = []
    y.set_handler(3, on_med)
    def on_echo(tok, buf: memoryview, k):
        echoed.append(np.frombuffer(buf, np.float64).copy())

    x.set_handler(4, on_echo)
    ready(x, y)
    data = np.arange(1000, dtype=np.float64)
    x.request_medium(0, 3, data, 7)
    assert b.wait(lambda: echoed, timeout=300)
    assert sums == [float(data.sum())]
    assert addrs[0] != data.__array_interface__["data"][0]
    expect = data.copy()
    expect[0] = -1.0
    assert np.array_equal(echoed[0], expect)


def test_returned_message_through_drain(pair):
    b, x, y = pair
    got = []

    def on_returned(status, opcode, tok):
        got.append((status, opcode, tok.handler, tok.is_request, tok.returned))
        with pytest.raises(ramp.ResourceError):
            tok.reply(1)

    x.set_error_handler(on_returned)
    ready(x, y)
    x.request(0, 77, 1)  # y has no handler 77
    assert b.wait(lambda: got, timeout=300)
    assert got == [(ramp.EBADHANDLER, ramp.AM_REQUEST_M, 77, True, True)]


def test_wait_spins_in_the_library_and_still_plays_every_message(pair):
    # ramp_DrainWait: wait() notices arrivals inside the library; every message is
    # played once, in order, and a wait with nothing to come still times out
    b, x, y = pair
    got = []
    y.set_handler(1, lambda tok, n: tok.reply(2, n + 1))
    x.set_handler(2, lambda tok, n: got.append(n))
    ready(x, y)
    for i in range(200):
        x.request(0, 1, i)
        assert b.wait(lambda: len(got) == i + 1, timeout=300)
    assert got == [i + 1 for i in range(200)]
    t0 = time.monotonic()
    assert not b.wait(lambda: False, timeout=0.05)
    # it returned, and not before its timeout (at any speed)
    assert time.monotonic() - t0 >= 0.049


def test_drain_wait_checks_its_arguments():
    import ctypes

    f = core._L()["ramp_DrainWait"]
    f.restype = ctypes.c_int
    n = ctypes.c_int(-1)
    with ramp.Bundle() as bb:
        msgs = (ctypes.c_char * (112 * 4))()
        h = ctypes.c_void_p(bb.handle)
        assert f(h, msgs, 4, ctypes.byref(n), -1) == int(ramp.ErrorCode.AM_ERR_BAD_ARG)
        assert f(h, msgs, 4, ctypes.byref(n), 1_000_001) == int(ramp.ErrorCode.AM_ERR_BAD_ARG)
        assert f(h, None, 4, ctypes.byref(n), 10) == int(ramp.ErrorCode.AM_ERR_BAD_ARG)
        assert f(h, msgs, 4, None, 10) == int(ramp.ErrorCode.AM_ERR_BAD_ARG)
        t0 = time.monotonic()
        assert f(h, msgs, 4, ctypes.byref(n), 2000) == 0  # nothing comes: 2 ms spin
        assert n.value == 0
        assert time.monotonic() - t0 >= 0.0015


def test_a_kept_token_stays_expired_while_later_tokens_are_fresh(pair):
    # _drain_play reuses the Token object of a handler that kept nothing; a token a
    # handler kept is never reused: it stays expired, and later messages get their own
    b, x, y = pair
    kept = []
    seen = []

    def on_req(tok, n):
        seen.append(id(tok))
        if n % 3 == 0:
            kept.append(tok)
        tok.reply(2, n)

    got = []
    y.set_handler(1, on_req)
    x.set_handler(2, lambda tok, n: got.append(n))
    ready(x, y)
    for i in range(30):
        x.request(0, 1, i)
        assert b.wait(lambda: len(got) == i + 1, timeout=300)
    assert got == list(range(30))
    assert len(kept) == 10
    assert len({id(t) for t in kept}) == 10, "a kept token was handed out again"
    for tok in kept:
        assert not tok.valid
        with pytest.raises(ramp.TokenExpiredError):
            tok.reply(2, 1)
    # a kept token (alive, so its id is its own) is not handed out after it was kept
    for k, tok in enumerate(kept):
        assert id(tok) not in seen[3 * k + 1 :], "message after %d reused a kept token" % (3 * k)


def test_an_exception_after_a_handler_returned_does_not_reuse_its_token(pair, monkeypatch):
    # _drain_play makes a played token ready for the next message after its handler,
    # unless someone kept it; an exception raised in between (here in the automatic
    # reply's ramp_DrainEnd, as a KeyboardInterrupt could) skips that check, so the
    # token, which the handler kept, must not be handed out again
    b, x, y = pair

    class Interrupt(BaseException):
        pass

    kept, later, got = [], [], []
    y.set_handler(1, lambda tok, n: kept.append(tok))  # no reply: ramp_DrainEnd follows
    y.set_handler(3, lambda tok, n: (later.append(tok), tok.reply(2, n)))
    x.set_handler(2, lambda tok, n: got.append(n))
    ready(x, y)
    real = core._dend
    calls = []

    def interrupted(p):
        calls.append(p)
        if len(calls) == 1:
            raise Interrupt()
        return real(p)

    monkeypatch.setattr(core, "_dend", interrupted)
    base = x.statistics()["RequestLatencySamples"]
    x.request(0, 1, 5)
    with pytest.raises(Interrupt):
        b.wait(lambda: bool(kept), timeout=300)
    assert len(kept) == 1 and core._tls.s.depth == 0
    monkeypatch.setattr(core, "_dend", real)
    x.request(0, 3, 7)
    assert b.wait(lambda: got == [7], timeout=300)
    assert later and later[0] is not kept[0], "a kept token was handed out again"
    assert not kept[0].valid


def test_a_poll_whose_drain_fails_raises_its_error_and_plays_nothing(pair, monkeypatch):
    # Endpoint.poll makes the drain call itself (a poll that finds nothing returns at
    # once); an error code it gets back is raised, with no record played
    b, x, y = pair
    ran = []
    y.set_handler(1, lambda tok, n: ran.append(n))
    ready(x, y)
    s = core._tls.s

    def failing(d):
        # as the library: the count written, 0 (at 20 in the descriptor d points to)
        ctypes.c_int.from_address(ctypes.addressof(d._obj) + 20).value = 0
        return -int(ramp.ErrorCode.AM_ERR_RESOURCE)

    monkeypatch.setattr(core, "_don", failing)
    for poll in (x.poll, y.poll, b.poll):
        with pytest.raises(ramp.ResourceError):
            poll()
    assert ran == [] and s.depth == 0
    monkeypatch.undo()
    x.request(0, 1, 4)
    t0 = time.monotonic()
    while not ran and time.monotonic() - t0 < 300:
        y.poll()
    assert ran == [4]


@pytest.mark.parametrize(
    "value, expect",
    [
        (0, 0),
        (-(1 << 31), -(1 << 31)),
        ((1 << 31) - 1, (1 << 31) - 1),
        (1 << 31, -(1 << 31)),  # past the one-argument calls: the array path, wrapped
        ((1 << 32) - 1, -1),
    ],
)
def test_one_argument_request_and_reply_carry_every_int32(pair, value, expect):
    # ramp_RequestShort1 / ramp_DrainReply1 take the argument by value (C int); values
    # of 2**31..2**32-1 go through the array calls, as unsigned 32-bit ints
    b, x, y = pair
    got = []
    y.set_handler(1, lambda tok, n: tok.reply(2, n) if n == expect else tok.reply(2, 12345))
    x.set_handler(2, lambda tok, n: got.append(n))
    ready(x, y)
    x.request(0, 1, value)
    assert b.wait(lambda: got, timeout=300)
    assert got == [expect]
    # and back: the reply's argument at the edges
    got.clear()
    y.set_handler(3, lambda tok, n: tok.reply(2, value))
    x.request(0, 3, 0)
    assert b.wait(lambda: got, timeout=300)
    assert got == [expect]
    with pytest.raises(OverflowError):
        x.request(0, 1, 1 << 32)  # too big for 32 bits: refused, not truncated


def test_one_argument_calls_check_their_arguments():
    import ctypes

    L = core._L()
    req1, rep1 = L["ramp_RequestShort1"], L["ramp_DrainReply1"]
    bad = int(ramp.ErrorCode.AM_ERR_BAD_ARG)
    assert req1(None, 0, 1, 5) == bad  # NULL endpoint
    assert req1(ctypes.c_void_p(0x7FFF0001), 0, 1, 5) == bad  # not an endpoint
    assert rep1(-1, 1, 5) == bad  # no such message
    assert rep1(0, 1, 5) == bad  # nothing drained on this thread


@pytest.mark.parametrize("mode", ["reply", "end"])
def test_reply_or_end_while_another_thread_holds_the_endpoint(mode):
    # The fast reply and end keep the GIL; another thread running a handler through
    # AM_Poll holds the endpoint and needs the GIL: the GIL-keeping calls must not
    # wait for it (ramp_DrainTry*), or both threads wait for ever.  In a subprocess,
    # so that a deadlock fails this test at the timeout instead of hanging the suite.
    script = os.path.join(os.path.dirname(__file__), "scripts", "held_endpoint.py")
    try:
        r = run([sys.executable, script, mode], timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail("deadlock: the %s did not finish in 90 s" % mode)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "OK"


def test_kept_tokens_are_never_reused_within_one_drain(pair):
    # several messages handed out by one drain: the spare token is looked at between
    # them (after the last one, by the next drain): one a handler kept is not reused
    b, x, y = pair
    kept, got = [], []

    def on_req(tok, n):
        if n % 2 == 0:
            kept.append(tok)
        tok.reply(2, n)

    y.set_handler(1, on_req)
    x.set_handler(2, lambda tok, n: got.append(n))
    ready(x, y)
    for round in range(5):
        for i in range(8):  # sent before anything polls: drained together
            x.request(0, 1, round * 8 + i)
        assert b.wait(lambda: len(got) == (round + 1) * 8, timeout=300)
    assert sorted(got) == list(range(40))
    assert len(kept) == 20
    assert len({id(t) for t in kept}) == 20, "a kept token was handed out again"
    for tok in kept:
        assert not tok.valid
        with pytest.raises(ramp.TokenExpiredError):
            tok.reply(2, 0)


def test_a_poll_on_another_thread_is_refused_the_cached_descriptor(pair):
    # a bundle keeps the poll descriptor of the thread that polled it last (_Poller,
    # marked with that thread's ramp_DrainThread()): the library refuses it to any
    # other thread (nothing drained), whose poll then takes the slow path and makes
    # the bundle's descriptor its own; every message is played once, on the thread
    # whose poll drained it
    b, x, y = pair
    got = []
    y.set_handler(1, lambda tok, n: (got.append(n), tok.reply(2, n)))
    x.set_handler(2, lambda tok, n: None)
    ready(x, y)
    b.poll()
    mine = b._poller
    assert mine.s is core._tls.s and mine.i[7] > 0
    seen = []

    def other() -> None:
        seen.append(core._don(mine.p))  # the main thread's descriptor: refused
        for k in range(3):
            x.request(0, 1, 100 + k)
            t0 = time.monotonic()
            while 100 + k not in got and time.monotonic() - t0 < 300:
                y.poll()
        seen.append(b._poller)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    theirs = seen[1]
    assert seen[0] == core._DRAIN_NOT_MINE
    assert theirs is not mine and theirs.i[7] not in (0, mine.i[7])
    assert core._don(theirs.p) == core._DRAIN_NOT_MINE  # and theirs to this thread
    x.request(0, 1, 7)
    t0 = time.monotonic()
    while 7 not in got and time.monotonic() - t0 < 300:
        y.poll()
    assert got == [100, 101, 102, 7]
    assert b._poller is mine, "the main thread's poll did not take its descriptor back"
    b.close()
    assert b._poller is core._NO_POLLER
    with pytest.raises(ramp.RampError, match="closed"):
        y.poll()


def test_a_wait_on_another_thread_is_refused_the_cached_descriptor(pair):
    # waits drain through the bundle's _Poller too (its wait descriptor, spin 100 us):
    # a wait on another thread is refused it (nothing drained), takes the slow path and
    # makes the descriptor its own; every message is played once, on the waiting
    # thread; a closed bundle's wait raises before it looks at until()
    b, x, y = pair
    got = []
    where = []
    y.set_handler(1, lambda tok, n: (got.append(n), where.append(threading.get_ident())))
    ready(x, y)
    for ep in (y, b):  # Endpoint.wait and Bundle.wait
        n0 = len(got)
        x.request(0, 1, len(got))
        assert ep.wait(lambda: len(got) > n0, timeout=300)
    # (a wait whose first round finds its message never reaches _wait_loop, where
    # a wait makes the descriptor: whether these two did depends on timing; a poll
    # makes it always)
    y.poll()
    mine = b._poller
    assert mine.s is core._tls.s and mine.wi[7] > 0 and mine.wi[6] == core._SPIN_CHUNK_US
    seen = []

    def other() -> None:
        seen.append(core._don(mine.wp))  # the main thread's descriptor: refused
        for k in range(3):
            x.request(0, 1, 100 + k)
            assert y.wait(lambda: 100 + k in got)
        seen.append(b._poller)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    theirs = seen[1]
    assert seen[0] == core._DRAIN_NOT_MINE
    assert theirs is not mine and theirs.wi[7] not in (0, mine.wi[7])
    assert where[2:] == [t.ident] * 3
    x.request(0, 1, 7)
    assert b.wait(lambda: 7 in got)
    assert got == [0, 1, 100, 101, 102, 7]
    assert b._poller is mine, "the main thread's wait did not take its descriptor back"
    b.close()
    calls = []
    for ep in (y, b):
        with pytest.raises(ramp.RampError, match="closed"):
            ep.wait(lambda: calls.append(1))
    assert not calls


def test_a_reused_token_answers_for_its_own_message(pair):
    # a played message's Token is reused for the next when nothing kept it: what it
    # says (ramp_GetTokenInfo, cached) is the new message's, never the last one's
    b, x, y = pair
    seen = []

    def on(tok, n):
        seen.append((tok.handler, tok.is_request, n))
        tok.reply(2, n)

    y.set_handler(1, on)
    y.set_handler(3, on)
    x.set_handler(2, lambda tok, n: seen.append((tok.handler, tok.is_request, n)))
    ready(x, y)
    for h in (1, 3, 1, 3):
        want = len(seen) + 2  # the request's handler, then the reply's
        x.request(0, h, h * 10)
        t0 = time.monotonic()
        while len(seen) < want and time.monotonic() - t0 < 300:
            b.poll()
    assert seen == [
        (1, True, 10), (2, False, 10), (3, True, 30), (2, False, 30),
        (1, True, 10), (2, False, 10), (3, True, 30), (2, False, 30),
    ]


# Endpoint.poll and Endpoint.wait (without timeout) play a drain of one quick message
# (a short one to a short handler of 0..2 arguments) themselves, not through _play;
# Bundle.wait with a timeout plays it through _play: each rule above, on each path.
# Two bundles, so that each drain of y's bundle hands out y's message alone.
STYLES = ("endpoint.poll", "endpoint.wait", "bundle.wait")


@pytest.fixture
def two():
    with ramp.Bundle() as bx, ramp.Bundle() as by:
        x, y = bx.allocate_endpoint(), by.allocate_endpoint()
        for ep, peer in ((x, y), (y, x)):
            ep.tag = TAG
            ep.map(0, peer.name, TAG)
        ready(x, y, depth=1)
        # the association's handshake needs both bundles polled
        got = []
        x.set_handler(9, lambda tok: got.append(1))
        y.set_handler(8, lambda tok: tok.reply(9))
        x.request(0, 8)
        t0 = time.monotonic()
        while not got and time.monotonic() - t0 < 300:
            bx.poll()
            by.poll()
        assert got == [1]
        yield bx, by, x, y


def _receive(style, y, by, until):
    """Runs y's bundle (as the style says) until until() is true."""
    if style == "endpoint.poll":
        t0 = time.monotonic()
        while not until():
            assert time.monotonic() - t0 < 300
            y.poll()
    elif style == "endpoint.wait":
        assert y.wait(until) is True  # no timeout: the loop in Endpoint.wait
    else:
        assert by.wait(until, timeout=300)


def _replied(x, bx, n):
    """Polls x's bundle until x has n request round trips done (replies, automatic
    ones too: the credit of depth 1 came back)."""
    t0 = time.monotonic()
    while x.statistics()["RequestLatencySamples"] < n:
        assert time.monotonic() - t0 < 300
        bx.poll()


@pytest.mark.parametrize("style", STYLES)
def test_quick_messages_keep_the_token_rules_on_every_path(two, style):
    # kept tokens expire and are never handed out again; a request not replied to gets
    # its automatic reply when its handler returns; 0, 1 and 2 arguments
    bx, by, x, y = two
    kept, seen, got = [], [], []

    def on_req(tok, n):
        assert tok.valid and tok.is_request and tok.handler == 1
        seen.append((id(tok), n))
        if n % 3 == 0:
            kept.append(tok)
        if n % 2 == 0:
            tok.reply(2, n)  # else its automatic reply

    y.set_handler(1, on_req)
    y.set_handler(3, lambda tok: seen.append((id(tok), "none")))
    y.set_handler(4, lambda tok, a, b: seen.append((id(tok), a, b)))
    x.set_handler(2, lambda tok, n: got.append(n))
    base = x.statistics()["RequestLatencySamples"]
    for i in range(12):
        x.request(0, 1, i)
        _receive(style, y, by, lambda: len(seen) == i + 1)
        _replied(x, bx, base + i + 1)
    x.request(0, 3)
    _receive(style, y, by, lambda: seen[-1][1] == "none")
    x.request(0, 4, -7, 2**31 - 1)
    _receive(style, y, by, lambda: seen[-1][1:] == (-7, 2**31 - 1))
    _replied(x, bx, base + 14)
    assert [s[1] for s in seen[:12]] == list(range(12))
    assert got == [0, 2, 4, 6, 8, 10]
    assert len(kept) == 4 and len({id(t) for t in kept}) == 4
    for k, tok in enumerate(kept):
        assert not tok.valid
        with pytest.raises(ramp.TokenExpiredError):
            tok.reply(2, 1)
        # (alive, so its id is its own) not handed out after it was kept
        assert id(tok) not in [s[0] for s in seen[3 * k + 1 :]]
    assert core._tls.s.depth == 0


@pytest.mark.parametrize("style", STYLES)
def test_a_quick_handler_that_raises_on_every_path(two, style):
    # the call that played it raises it; the automatic reply went out all the same; the
    # token (kept by the traceback) expired
    bx, by, x, y = two
    toks = []

    def boom(tok, v):
        toks.append(tok)
        raise ValueError("boom %d" % v)

    y.set_handler(1, boom)
    base = x.statistics()["RequestLatencySamples"]
    for v in (1, 2):
        x.request(0, 1, v)
        with pytest.raises(ValueError, match="boom %d" % v):
            _receive(style, y, by, lambda: len(toks) == v)
        _replied(x, bx, base + v)
    assert toks[0] is not toks[1] and not toks[0].valid and not toks[1].valid
    assert core._tls.s.depth == 0


@pytest.mark.parametrize("style", STYLES)
def test_an_exception_after_a_quick_handler_on_every_path(two, style, monkeypatch):
    # raised between the handler's return and its token's check (here by the automatic
    # reply's ramp_DrainEnd): the token, which the handler kept, is not handed out again
    bx, by, x, y = two

    class Interrupt(BaseException):
        pass

    kept, later = [], []
    y.set_handler(1, lambda tok, n: kept.append(tok))  # no reply: ramp_DrainEnd follows
    y.set_handler(3, lambda tok, n: later.append(tok))
    real = core._dend

    def interrupted(p):
        monkeypatch.setattr(core, "_dend", real)
        raise Interrupt()

    monkeypatch.setattr(core, "_dend", interrupted)
    base = x.statistics()["RequestLatencySamples"]
    x.request(0, 1, 5)
    with pytest.raises(Interrupt):
        _receive(style, y, by, lambda: bool(kept))
    assert len(kept) == 1 and core._tls.s.depth == 0
    assert core._dend is real
    # the request was never ended: y's next drain releases it (its automatic reply)
    t0 = time.monotonic()
    while x.statistics()["RequestLatencySamples"] < base + 1:
        assert time.monotonic() - t0 < 300
        bx.poll()
        by.poll()
    x.request(0, 3, 7)
    _receive(style, y, by, lambda: bool(later))
    assert later[0] is not kept[0], "a kept token was handed out again"
    assert not kept[0].valid


@pytest.mark.parametrize("style", STYLES)
def test_a_drain_of_one_message_that_is_not_quick_on_every_path(two, style):
    # a medium message, and a short one of 3 arguments: played from the whole record
    # (_play_one), as before
    bx, by, x, y = two
    got = []
    y.set_handler(1, lambda tok, buf: got.append(bytes(buf)), kind="medium", nargs=0)
    y.set_handler(2, lambda tok, a, b, c: got.append((a, b, c)))
    base = x.statistics()["RequestLatencySamples"]
    for k in range(2):  # the second of each kind: known not quick (Endpoint._quick)
        x.request_medium(0, 1, b"abc")
        _receive(style, y, by, lambda: len(got) == 2 * k + 1)
        _replied(x, bx, base + 2 * k + 1)
        x.request(0, 2, 1, 2, 3)
        _receive(style, y, by, lambda: len(got) == 2 * k + 2)
        _replied(x, bx, base + 2 * k + 2)
    assert got == [b"abc", (1, 2, 3)] * 2
    # a handler registered anew at an index is played as it is now: quick, here
    y.set_handler(2, lambda tok, a: got.append(("quick", a)))
    x.request(0, 2, 9)
    _receive(style, y, by, lambda: len(got) == 5)
    assert got[4] == ("quick", 9)


def test_endpoint_wait_without_timeout_sleeps_in_wait_sema_then_plays(two):
    # Endpoint.wait's loop, after ``spin`` seconds without a message: AM_WaitSema,
    # which wakes for the message (sent here only once the wait is in it)
    bx, by, x, y = two
    got = []
    y.set_handler(1, lambda tok, n: got.append(n))
    entered = threading.Event()
    real = by.wait_sema

    def wait_sema() -> None:
        entered.set()
        real()

    by.wait_sema = wait_sema

    def send() -> None:
        if entered.wait(300):
            x.request(0, 1, 5)

    t = threading.Thread(target=send)
    t.start()
    try:
        assert y.wait(lambda: bool(got)) is True
    finally:
        entered.set()
        t.join()
    assert got == [5] and core._tls.s.depth == 0


def test_the_kinds_known_not_quick_are_bounded(pair):
    # Endpoint.poll and Endpoint.wait enter a kind their endpoint's quick table lacks
    # as None (not quick); at most 1024 entries, and an unknown endpoint gets none
    b, x, y = pair
    y.set_handler(1, lambda tok, n: None)
    quick = dict(y._quick)
    for kind in range(2, 3000):
        assert core._not_quick(y._handle, kind << 8) is None
    assert core._not_quick(12345, 2 << 8) is None
    assert len(y._quick) == 1024
    assert all(y._quick[k] == v for k, v in quick.items())
    assert all(v is None for k, v in y._quick.items() if k not in quick)
