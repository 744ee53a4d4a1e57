"""The round trip's fast calls (no ctypes argtypes): every bad argument still gets the
error the checked path gives, and every good one the same delivery.

Endpoint.request and Token.reply of one argument call ramp_RequestShort1 and
ramp_DrainReply1 through function objects without argtypes, after range checks of
their own (ctypes would pass an int past 32 bits truncated, not refuse it).  Each case
here runs twice: through the fast call, and with the fast call taken away (the checked
path, with argtypes and the package's own checks); the outcomes must be equal: the
same exception type and message, or the same values delivered.
"""

from __future__ import annotations

import ctypes
import enum
from decimal import Decimal
from typing import Any, Callable, List, Tuple

import pytest

import ramp
import ramp.core as core
from conftest import ready

try:
    import numpy as np
except ImportError:  # numpy is optional
    np = None


class Handler(enum.IntEnum):
    ECHO = 1


# (dest, handler, argument): good and bad, of every kind a caller may pass
VALUES: List[Any] = [
    0,
    -1,
    7,
    255,
    256,
    (1 << 31) - 1,
    -(1 << 31),
    1 << 31,  # past int32: the array call, as uint32 (wraps)
    (1 << 32) - 1,
    1 << 32,  # too big for 32 bits
    -(1 << 31) - 1,
    1 << 64,
    -(1 << 70),
    1.0,
    1.5,
    float("nan"),
    "1",
    b"1",
    None,
    True,
    Decimal(1),
    ctypes.c_int(1),
    object(),
    [1],  # unhashable
    {1: 1},
]
if np is not None:
    VALUES += [np.int32(1), np.int64(1 << 40), np.float64(1.0)]

REQUESTS: List[Tuple[Any, Any, Any]] = (
    [(0, 1, v) for v in VALUES]
    + [(0, h, 5) for h in VALUES]
    + [(d, 1, 5) for d in VALUES]
    + [(0, Handler.ECHO, 5), (False, 1, 5)]
)


def outcome(call: Callable[[], Any]) -> Tuple[str, str]:
    try:
        call()
    except Exception as e:  # the exception is the outcome compared
        return (type(e).__name__, str(e))
    return ("ok", "")


def checked_path() -> Any:
    """Takes the fast branch away (its calls answer None, as a library without them):
    requests and replies take their checked path."""

    class Restore:
        def __enter__(self) -> None:
            self.saved = core._rshort1, core._dreply1
            core._rshort1 = core._dreply1 = core._not_taken

        def __exit__(self, *exc: object) -> None:
            core._rshort1, core._dreply1 = self.saved

    return Restore()


def run_requests(pair: Any) -> List[Tuple[Tuple[str, str], List[Any]]]:
    b, x, y = pair
    got: List[Any] = []
    y.set_handler(1, lambda tok, n: got.append(n))
    # a request sent to another handler index comes back (EBADHANDLER): recorded too
    x.set_error_handler(lambda status, op, tok: got.append(("returned", int(status))))
    out = []
    for dest, handler, value in REQUESTS:
        got.clear()
        r = outcome(lambda: x.request(dest, handler, value))
        if r[0] == "ok":  # sent: wait for where it went
            assert b.wait(lambda: got, timeout=300), (dest, handler, value)
        out.append((r, list(got)))
    return out


def test_requests_of_one_argument_give_the_checked_paths_outcome(pair):
    b, x, y = pair
    ready(x, y, depth=64)
    core._fast()
    assert core._rshort1 is not core._not_taken, "the fast call is there"
    fast = run_requests(pair)
    with checked_path():
        checked = run_requests(pair)
    for case, f, c in zip(REQUESTS, fast, checked):
        assert f == c, "request%r: fast %r, checked %r" % (case, f, c)
    # and the cases say what they should: refusals are errors, not truncations
    by_case = dict(zip(map(repr, REQUESTS), fast))
    assert by_case[repr((0, 1, 1 << 32))][0][0] == "OverflowError"
    assert by_case[repr((0, 1, -(1 << 31) - 1))][0][0] == "OverflowError"
    assert by_case[repr((0, 1, 1.5))][0][0] == "TypeError"
    assert by_case[repr((0, 1, "1"))][0][0] == "TypeError"
    assert by_case[repr((0, 256, 5))][0][0] == "BadArgError"
    assert by_case[repr((0, 1 << 32, 5))][0][0] == "BadArgError"
    assert by_case[repr((-1, 1, 5))][0][0] == "BadArgError"
    assert by_case[repr((1 << 32, 1, 5))][0][0] == "BadArgError"
    assert by_case[repr((0, 1, (1 << 31) - 1))] == (("ok", ""), [(1 << 31) - 1])
    assert by_case[repr((0, 1, 1 << 31))] == (("ok", ""), [-(1 << 31)])
    assert by_case[repr((0, Handler.ECHO, 5))] == (("ok", ""), [5])


REPLIES: List[Tuple[Any, Any]] = [(2, v) for v in VALUES] + [(h, 5) for h in VALUES]


def run_replies(pair: Any) -> List[Tuple[Tuple[str, str], List[int]]]:
    b, x, y = pair
    got: List[int] = []
    out: List[Tuple[Tuple[str, str], List[int]]] = []
    case: List[Any] = [None]

    def on_request(tok: ramp.Token, n: int) -> None:
        handler, value = case[0]
        out.append((outcome(lambda: tok.reply(handler, value)), []))

    y.set_handler(1, on_request)
    x.set_handler(2, lambda tok, n: got.append(n))
    # a reply to a handler x lacks comes back to y (EBADHANDLER): recorded too
    y.set_error_handler(lambda status, op, tok: got.append(("returned", int(status))))
    for c in REPLIES:
        case[0] = c
        got.clear()
        n = len(out)
        x.request(0, 1, 0)
        assert b.wait(lambda: len(out) > n, timeout=300), c
        if out[-1][0][0] == "ok":  # a reply went out: wait for where it went
            assert b.wait(lambda: got, timeout=300), c
        out[-1] = (out[-1][0], list(got))
    return out


def test_replies_of_one_argument_give_the_checked_paths_outcome(pair):
    b, x, y = pair
    ready(x, y, depth=64)
    core._fast()
    assert core._dreply1 is not core._not_taken, "the fast call is there"
    fast = run_replies(pair)
    with checked_path():
        checked = run_replies(pair)
    for case, f, c in zip(REPLIES, fast, checked):
        assert f == c, "reply%r: fast %r, checked %r" % (case, f, c)
    by_case = dict(zip(map(repr, REPLIES), fast))
    assert by_case[repr((2, 1 << 32))][0][0] == "OverflowError"
    assert by_case[repr((2, 1.5))][0][0] == "TypeError"
    assert by_case[repr((2, None))][0][0] == "TypeError"
    assert by_case[repr((256, 5))][0][0] == "BadArgError"
    assert by_case[repr((-1, 5))][0][0] == "BadArgError"
    assert by_case[repr((2, (1 << 31) - 1))] == (("ok", ""), [(1 << 31) - 1])
    assert by_case[repr((2, -(1 << 31)))] == (("ok", ""), [-(1 << 31)])


def test_fast_calls_on_a_closed_endpoint_and_an_expired_token(pair):
    b, x, y = pair
    ready(x, y)
    kept = []
    y.set_handler(1, lambda tok, n: kept.append(tok))
    x.request(0, 1, 1)
    assert b.wait(lambda: kept, timeout=300)
    with pytest.raises(ramp.TokenExpiredError):
        kept[0].reply(2, 1)  # the fast path's shape, on a dead token
    e = ramp.Endpoint(b)
    e.close()
    with pytest.raises(ramp.RampError, match="closed"):
        e.request(0, 1, 1)


def test_the_raw_fast_functions_refuse_what_is_not_theirs():
    # the function objects without argtypes, called as the package never does: the C
    # side's own checks answer (an error code, never a crash)
    core._fast()
    bad = int(ramp.ErrorCode.AM_ERR_BAD_ARG)
    assert core._rshort1(None, 0, 1, 5) == bad  # NULL endpoint
    assert core._rshort1(core._ptr_arg(0x7FFF0001), 0, 1, 5) == bad  # not an endpoint
    assert core._dreply1(-1, 1, 5) == bad  # no such message
    assert core._dreply1(1 << 30, 1, 5) == bad
    with ramp.Bundle() as bb:
        n = (ctypes.c_int * 1)()
        msgs = (ctypes.c_char * 112)()
        hp = bb._hp
        dwait = core._Fast.dwait
        assert dwait(hp, ctypes.byref(msgs), -1, ctypes.byref(n), 0) == bad
        assert dwait(hp, None, 1, ctypes.byref(n), 0) == bad
        assert dwait(hp, ctypes.byref(msgs), 1, None, 0) == bad
        assert dwait(None, ctypes.byref(msgs), 1, ctypes.byref(n), 0) == bad
        # ramp_DrainOn: the count, or minus the error code
        d = (ctypes.c_int64 * 4)()
        di = memoryview(d).cast("B").cast("i")
        d[0], d[1] = bb._handle, ctypes.addressof(msgs)
        di[4], di[5], di[6] = 1, -1, 0
        assert core._don(None) == -bad
        assert core._don(ctypes.byref(d)) == 0 and di[5] == 0  # nothing there
        di[6] = -1  # spin_us
        assert core._don(ctypes.byref(d)) == -bad
        di[6], di[4] = 0, -1  # max
        assert core._don(ctypes.byref(d)) == -bad
        di[4], d[1] = 1, 0  # NULL array
        assert core._don(ctypes.byref(d)) == -bad
        d[0], d[1] = 0x7FFF0001, ctypes.addressof(msgs)  # not a bundle
        assert core._don(ctypes.byref(d)) == -bad
    with pytest.raises(ctypes.ArgumentError):
        core._dreply1(0, 1, 1.5)  # ctypes refuses before C runs
