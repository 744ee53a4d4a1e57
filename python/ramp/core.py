"""Bundles, endpoints, handlers, tokens and endpoint names: the AM-2 API in Python.

Handlers
--------
ramp calls a C handler through the exact prototype of the message it delivers:

* short:           ``void h(void *token, int32_t a0, ..., int32_t aN-1)``
* medium and long: ``void h(void *token, void *buf, size_t nbytes, int32_t a0, ...)``
* handler 0:       ``void h(int status, op_t opcode, void *token)``

A ctypes callback has a fixed C prototype, so a Python handler is registered for
one *kind* (``"short"``, or ``"medium"``/``"long"``/``"bulk"`` = medium or long) and
one argument count ``nargs`` (0..16).  Both are taken from the function's signature
unless given: ``def h(token, a, b)`` is a short handler of 2 arguments;
``def h(token, buf: memoryview, a)`` (the second parameter annotated ``memoryview``,
``bytes`` or ``bytearray``) is a bulk handler of 1 argument.  A function taking
``*args`` needs an explicit ``nargs``.

How handlers are called: :meth:`Bundle.poll`, :meth:`Endpoint.poll` and the waits
receive with ``ramp_Drain`` (ramp.h, "pull-style receive"): one C call describes the
delivered messages in a per-thread array, and Python calls their functions itself (no
C-to-Python callback per message).  Messages that arrive during other C calls (the
poll inside a request, ``AM_WaitSema``, a poll from inside a handler, a request to the
endpoint itself) reach the same functions through ctypes trampolines.  Either way the
message's category and argument count are checked first: a message of the wrong kind
(say a short message to a bulk handler) or with another number of arguments than the
handler declares is not passed to the function; a :class:`HandlerKindError` is raised
instead.  A drained request whose handler did not reply gets its automatic reply as
soon as the handler returns (``ramp_DrainEnd``).

Python handler functions are called as ``fn(token, a0, ..., aN-1)`` (short) or
``fn(token, buf, a0, ..., aN-1)`` (medium/long).  For a **medium** message ``buf`` is
a writable memoryview of the library's receive buffer, valid only while the
handler runs (it is released when the handler returns: copy with ``bytes(buf)`` or
``numpy.array(buf)`` what you keep).  For a **long** message ``buf`` is a memoryview
of the destination range of the endpoint's segment (it keeps the segment alive).

Exceptions
----------
An exception raised by a Python handler never unwinds through C: the trampoline
catches it (any ``BaseException``) and the Python call during which the handler ran
(``poll``, ``wait``, ``request*``, ``reply*``, ``barrier``...) raises it once the C
call has returned.  When several handlers raised during one call, the first is
raised there and the others by the following calls, in order.

Threads
-------
Handlers run on the thread that made the call running them.  ctypes releases the
GIL during every C call that may block or wait (the few that never do -- ending and
replying to drained messages -- keep it: cheaper), so other Python threads run while
one polls or waits; an
``AM_PAR`` bundle may be used from several threads at once, an ``AM_SEQ`` one by one
thread at a time.
"""

from __future__ import annotations

import ctypes
import inspect
import sys
import struct
import threading
import time
from ctypes import byref, c_int, c_int32, c_size_t, c_uint8, c_uint64, c_void_p
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from . import _lib, _regions
from ._base import EndpointName, _check, _handle_of, _L, error_for
from ._buffers import BufferLike, SendBuffer, flat_writable, view_of
from ._lib import BULK_PROTOS, RETURNED_PROTO, SHORT_PROTOS, en_t, ramp_stats_t
from .constants import (
    AM_NOTEMPTY,
    AM_SEQ,
    MAX_NUM_HANDLERS,
    MAX_SHORT,
    Category,
    ErrorCode,
    Opcode,
    Status,
)
from .errors import (
    BadArgError,
    HandlerKindError,
    RampError,
    ReturnedMessageError,
    TokenExpiredError,
)

__all__ = [
    "init",
    "terminate",
    "version",
    "library_info",
    "error_name",
    "status_name",
    "max_seg_length",
    "EndpointName",
    "Token",
    "TokenInfo",
    "Bundle",
    "Endpoint",
    "HandlerFunction",
    "ErrorHandlerFunction",
    "statistics_to_dict",
    "initial_statistics",
    "aggregate_statistics",
    "format_statistics",
    "set_verbose_errors",
]

#: A Python handler: ``fn(token, *args)`` (short) or ``fn(token, buf, *args)`` (bulk).
HandlerFunction = Callable[..., None]
#: A Python handler 0: ``fn(status, opcode, token)`` for a returned message.
ErrorHandlerFunction = Callable[["Status", "Opcode", "Token"], None]

# ramp_msg_t (include/ramp.h, "pull-style receive"): token, ep, buf, nbytes,
# args[16], source_id, status, opcode, handler, category, nargs, flags: the tuple of
# unpack_from has them at 0, 1, 2, 3, 4..19, 20, 21, 22, 23, 24, 25, 26
_MSG = struct.Struct("=QQQQ16i3i4B")
_MSG_SIZE = _MSG.size  # 112
# what every message needs first: token, ep, args[0], args[1], and its kind: handler,
# category, nargs and flags read as one little-endian uint32 (handler | category << 8 |
# nargs << 16 | flags << 24): 5 values, where unpacking the whole record makes 27
# (the four bytes as one uint32 in that order: little-endian hosts, all ramp builds for)
_MSG_HEAD = struct.Struct("=QQ16x2i56x12xI")
assert sys.byteorder == "little", "ramp's Python binding reads ramp_msg_t little-endian"
_KIND_REQUEST = 1 << 24  # kind >= this: a request (flags & 1) or a returned message
_KIND_RETURNED = 2 << 24  # kind >= this: a returned message (flags & 2)
_DRAIN_BATCH = 32
_SPIN_CHUNK_US = 100  # Bundle.wait spins in the library this long between looks at until()
_SPIN_CHUNK_S = _SPIN_CHUNK_US * 1e-6
_MSG_REQUEST = 1
_MSG_RETURNED = 2

_INT32_MIN = -(1 << 31)
_UINT32_END = 1 << 32


class _NoArg(int):
    """The default of the first argument of Token.reply and Endpoint.request: none given.
    That argument is a parameter of its own, not the first of *args:
    the round trip's one-argument call binds it directly, with no tuple made for it.  An
    int outside every argument's range, so that the fast path's range check turns it
    away without an exception; told from a caller's value by identity."""

    def __repr__(self) -> str:
        return "<no argument>"


_NO_ARG: Any = _NoArg(1 << 40)
_ARGV = [c_int32 * n for n in range(MAX_SHORT + 1)]
_EMPTY_ARGV = _ARGV[0]()

# --------------------------------------------------------------------------------------
# Exceptions raised by handlers, re-raised by the call that ran them
# --------------------------------------------------------------------------------------


class _ThreadState:
    """Per-thread state: exceptions raised by handlers, handler count, scratch space.
    A plain object reached through one threading.local attribute (_tls.s): every
    attribute of a threading.local costs a per-thread dictionary look-up, too slow for
    the receive path."""

    __slots__ = (
        "pending",
        "count",
        "info",
        "addr",
        "depth",
        "msgs",
        "msgs_addr",
        "ndrained",
        "ndrained_addr",
        "msgs_p",
        "ndrained_p",
        "msgs_view",
        "ndrained_view",
        "argv",
        "spare",
        "drain",
        "drain_p",
        "drain_q",
        "drain_i",
        "drain_eb",
        "poll",
        "poll_p",
        "poll_q",
        "poll_i",
        "tid",
        "pollers",
    )

    def __init__(self) -> None:
        self.pending: List[BaseException] = []
        self.count = 0
        # ramp_GetTokenInfo's three out-parameters, then ramp_GetTokenArgCount's
        self.info = (c_int * 4)()
        self.addr = ctypes.addressof(self.info)
        # Python handlers running on this thread (a poll inside one uses AM_Poll)
        self.depth = 0
        # ramp_Drain's message array and count (see "Pull-style receive")
        self.msgs = (ctypes.c_char * (_MSG_SIZE * _DRAIN_BATCH))()
        self.msgs_addr = ctypes.addressof(self.msgs)
        self.ndrained = (c_int * 1)()
        self.ndrained_addr = ctypes.addressof(self.ndrained)
        # made once: ctypes passes a byref object as it is, where a c_void_p argument
        # costs it a new parameter object every call (made and freed around the call)
        self.msgs_p = byref(self.msgs)
        self.ndrained_p = byref(self.ndrained)
        # the same memory as plain memoryviews: reading through them costs less than
        # through the ctypes objects (which describe their buffer anew at every read)
        self.msgs_view = memoryview(self.msgs).cast("B")
        self.ndrained_view = memoryview(self.ndrained).cast("B").cast("i")
        # the argument vector of this thread's short requests and replies (the C call
        # copies it before anything else, so a nested call may reuse it)
        self.argv = (c_int32 * MAX_SHORT)()
        # a Token of a drained message that nothing kept after its handler returned
        # (see _play): the next one reuses it instead of making a new object
        self.spare: Optional[Token] = None
        # ramp_DrainOn's ramp_drain_t {eb, msgs, max, count, spin_us, 0}: the wait's
        # drain in one argument (ctypes converts each argument, about 30 ns each); eb
        # written only when the bundle changes (drain_eb), count read through drain_i
        self.drain = (ctypes.c_char * 32)()
        self.drain_p = byref(self.drain)
        self.drain_q = memoryview(self.drain).cast("B").cast("q")
        self.drain_i = memoryview(self.drain).cast("B").cast("i")
        self.drain_eb = 0
        self.drain_q[1] = self.msgs_addr
        self.drain_i[4] = _DRAIN_BATCH
        self.drain_i[6] = _SPIN_CHUNK_US
        # a second one for polls (spin_us 0): nothing rewritten around each poll
        poll = self.poll = (ctypes.c_char * 32)()
        self.poll_p = byref(poll)
        self.poll_q = memoryview(poll).cast("B").cast("q")
        self.poll_i = memoryview(poll).cast("B").cast("i")
        self.poll_q[1] = self.msgs_addr
        self.poll_i[4] = _DRAIN_BATCH
        # ramp_DrainThread() (None: not asked yet; 0: none, polls never cached) and
        # this thread's _Poller of each bundle it polled (see _Poller)
        self.tid: Optional[int] = None
        self.pollers: Dict[int, "_Poller"] = {}


class _Poller:
    """A poll's ramp_drain_t for one bundle and one thread (its messages into that
    thread's array), marked with the thread's ramp_DrainThread(): a poll of the bundle
    on any other thread gets RAMP_DRAIN_NOT_MINE from the library, nothing done.  Each
    bundle keeps the _Poller of the thread that polled it last (Bundle._poller), so
    that a poll finds its thread's state without a threading.local look-up (about
    0.1 us): the library tells it when it is on another thread (then it takes the slow
    path, _poll_bundle, which makes the bundle's _Poller its own)."""

    __slots__ = ("s", "buf", "p", "i", "wbuf", "wp", "wi")

    def __init__(self, s: Any, eb: int, tid: int) -> None:
        self.s = s  # the thread's _ThreadState (its depth, its drained messages)
        self.buf, self.p, self.i = self._descriptor(s, eb, tid, 0)
        # the same for a wait's drain (spin_us _SPIN_CHUNK_US): the waits of this
        # thread find it in the bundle as the polls do theirs (no threading.local
        # look-up, no eb rewritten when the thread drains several bundles)
        self.wbuf, self.wp, self.wi = self._descriptor(s, eb, tid, _SPIN_CHUNK_US)

    @staticmethod
    def _descriptor(s: Any, eb: int, tid: int, spin_us: int) -> Tuple[Any, Any, memoryview]:
        """A ramp_drain_t {eb, s's messages, max, count, spin_us, tid}: the struct, a
        byref to it, and its int32 fields as a memoryview."""
        buf = (ctypes.c_char * 32)()
        q = memoryview(buf).cast("B").cast("q")
        q[0] = eb
        q[1] = s.msgs_addr
        i = memoryview(buf).cast("B").cast("i")
        i[4] = _DRAIN_BATCH  # max; i[5] count
        i[6] = spin_us
        i[7] = tid
        return buf, byref(buf), i


class _NeverState:
    """The state of _NO_POLLER: handlers always running, so polls take the slow path."""

    depth = 1


# a bundle's _Poller before any poll and after it is closed: always the slow path
_NO_POLLER: Any = _Poller.__new__(_Poller)
_NO_POLLER.s = _NeverState()
_NO_POLLER.p = _NO_POLLER.wp = None
_DRAIN_NOT_MINE = -1000  # RAMP_DRAIN_NOT_MINE (include/ramp.h)


class _Local(threading.local):
    def __init__(self) -> None:
        self.s = _ThreadState()


_tls = _Local()


def _handler_count() -> int:
    return _tls.s.count


# One entry per exception raised by a handler and not yet re-raised, on every thread:
# the fast paths look at this one global instead of their thread's list (a
# threading.local attribute costs about 40 ns); when it is not empty they take _after,
# which looks at the thread's.  A list: its append and pop are atomic under the GIL
# (a global int's += is not: two threads could lose an increment).
_pending_any: List[None] = []


def _defer(s: "_ThreadState", e: BaseException) -> None:
    """Keeps what a handler raised, for the call that ran it to raise (_after)."""
    s.pending.append(e)
    _pending_any.append(None)


def _after(rc: int, function: str, detail: str = "") -> None:
    """Raises what a handler raised during the call, else the call's error code."""
    p = _tls.s.pending
    if p:
        try:
            _pending_any.pop()
        except IndexError:  # never: one entry per kept exception
            pass
        raise p.pop(0)
    if rc:
        raise error_for(rc, function, detail)


# --------------------------------------------------------------------------------------
# Library-wide functions
# --------------------------------------------------------------------------------------


def init() -> None:
    """``AM_Init``: initialises the AM layer (reference-counted; Bundle() does it too)."""
    _check(_L().AM_Init(), "AM_Init")


def terminate() -> None:
    """``AM_Terminate``: undoes one :func:`init`; the last one frees every bundle and endpoint.

    Python objects of freed bundles and endpoints are marked closed.
    """
    rc = _L().AM_Terminate()
    _sweep()
    _check(rc, "AM_Terminate")


def _sweep() -> None:
    """Marks closed the Python objects of bundles the library no longer has (after the
    last AM_Terminate freed everything)."""
    L = _L()
    for b in list(_bundles.values()):
        h = b._handle
        if h and L.AM_GetEventMask(h, byref(c_int())) == ErrorCode.AM_ERR_BAD_ARG:
            b._forget()


def version() -> str:
    """The loaded library's version (``ramp_Version()``), e.g. ``"0.1.0"``."""
    return str(_L().ramp_Version().decode())


def library_info() -> _lib.LibraryInfo:
    """Which libramp.so was loaded, from where and why (loads it if needed)."""
    return _lib.info()


def error_name(code: int) -> str:
    """``ramp_ErrorName``: the name of an ``AM_*`` return code, e.g. ``"AM_ERR_BAD_ARG"``."""
    return str(_L().ramp_ErrorName(int(code)).decode())


def status_name(status: int) -> str:
    """``ramp_StatusName``: the name of a handler-0 status code, e.g. ``"EBADTAG"``."""
    return str(_L().ramp_StatusName(int(status)).decode())


def max_seg_length() -> int:
    """``AM_MaxSegLength``: the largest segment length the library accepts, bytes."""
    n = c_size_t()
    _check(_L().AM_MaxSegLength(byref(n)), "AM_MaxSegLength")
    return n.value


def set_verbose_errors(on: bool) -> None:
    """Sets ``ramp_VerboseErrors``: when true the library prints every error return."""
    c_int.in_dll(_L(), "ramp_VerboseErrors").value = 1 if on else 0


# --------------------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------------------


def _argv(args: Tuple[int, ...], function: str) -> Tuple[int, Any]:
    n = len(args)
    if n > MAX_SHORT:
        raise BadArgError(
            ErrorCode.AM_ERR_BAD_ARG,
            function,
            "at most %d handler arguments, got %d" % (MAX_SHORT, n),
        )
    if n == 0:
        return 0, _EMPTY_ARGV
    try:
        argv = _ARGV[n](*args)  # TypeError for non-integers
    except TypeError:
        raise TypeError("handler arguments must be integers, got %r" % (args,)) from None
    if min(args) < _INT32_MIN or max(args) >= _UINT32_END:
        raise OverflowError(
            "handler arguments %r do not fit in 32 bits (int32, or uint32 which wraps)" % (args,)
        )
    return n, argv


def _short_argv(args: Tuple[int, ...], function: str) -> Tuple[int, Any]:
    """_argv for the hot paths: 1 or 2 plain int arguments go into the thread's vector."""
    n = len(args)
    if n == 1:
        x = args[0]
        if x.__class__ is int and _INT32_MIN <= x < _UINT32_END:
            a = _tls.s.argv
            a[0] = x
            return 1, a
    elif n == 2:
        x, y = args
        if (
            x.__class__ is int
            and y.__class__ is int
            and _INT32_MIN <= x < _UINT32_END
            and _INT32_MIN <= y < _UINT32_END
        ):
            a = _tls.s.argv
            a[0] = x
            a[1] = y
            return 2, a
    elif n == 0:
        return 0, _EMPTY_ARGV
    return _argv(args, function)


def _dest_index(dest: int, function: str) -> int:
    d = int(dest)
    if not 0 <= d < _UINT32_END:
        raise BadArgError(
            ErrorCode.AM_ERR_BAD_ARG, function, "translation index %d is out of range" % d
        )
    return d


def _offset(offset: int, function: str) -> int:
    o = int(offset)
    if o < 0:
        raise BadArgError(ErrorCode.AM_ERR_BAD_ARG, function, "negative destination offset %d" % o)
    return o


def _handler_index(handler: int, function: str) -> int:
    h = int(handler)
    if not 0 <= h < MAX_NUM_HANDLERS:
        raise BadArgError(
            ErrorCode.AM_ERR_BAD_ARG, function, "handler index %d is outside 0..255" % h
        )
    return h


# --------------------------------------------------------------------------------------
# Tokens
# --------------------------------------------------------------------------------------


class TokenInfo(NamedTuple):
    """What ``ramp_GetTokenInfo`` reports about a message."""

    handler: int
    """The handler index the message was sent to."""
    category: Category
    """Its category: short, medium or long."""
    is_request: bool
    """True for a request, False for a reply."""


class Token:
    """The token of the message a handler is running for.

    Valid only while that handler runs (afterwards every method raises
    :class:`TokenExpiredError`).  A request handler may reply once, with
    :meth:`reply`, :meth:`reply_medium` or :meth:`reply_long`; a request handler that
    returns without replying makes ramp send an automatic empty reply.
    """

    __slots__ = ("_ptr", "_ep", "_raw", "returned", "_replied", "_idx")

    def __init__(
        self, ptr: int, endpoint: "Endpoint", returned: bool = False, idx: int = -1
    ) -> None:
        self._ptr: Optional[int] = ptr
        self._ep = endpoint
        # (ptr, handler, category, is_req): ramp_GetTokenInfo's answer for the message
        # ptr (a drained message's Token may be reused for the next: see _play)
        self._raw: Optional[Tuple[int, int, int, int]] = None
        self._replied = False
        # a drained message: its index in the thread's last drain (-1: none, or expired)
        self._idx = idx
        #: True for the token of a returned (undeliverable) message, in handler 0.
        self.returned = returned

    def _p(self) -> int:
        p = self._ptr
        if p is None:
            raise TokenExpiredError("token used after its handler returned")
        return p

    @property
    def valid(self) -> bool:
        """Whether the handler of this token is still running."""
        return self._ptr is not None

    @property
    def handle(self) -> int:
        """The raw ``void *token`` value (for passing to C code)."""
        return self._p()

    def info(self) -> TokenInfo:
        """``ramp_GetTokenInfo``: handler index, category and request/reply."""
        p = self._p()
        raw = self._raw
        if raw is None or raw[0] != p:
            h, cat, req = c_uint8(), c_int(), c_int()
            _check(
                _L().ramp_GetTokenInfo(p, byref(h), byref(cat), byref(req)),
                "ramp_GetTokenInfo",
            )
            raw = self._raw = (p, h.value, cat.value, req.value)
        return TokenInfo(raw[1], _CATEGORIES[raw[2]], bool(raw[3]))

    @property
    def handler(self) -> int:
        """The handler index the message was sent to."""
        return self.info().handler

    @property
    def category(self) -> Category:
        """The message's category (:class:`Category`)."""
        return self.info().category

    @property
    def is_request(self) -> bool:
        """True when the message is a request (False: a reply)."""
        return self.info().is_request

    @property
    def source(self) -> EndpointName:
        """``AM_GetSourceEndpoint``: the sender's name (for a returned message: the refuser)."""
        en = en_t()
        _check(_L().AM_GetSourceEndpoint(self._p(), byref(en)), "AM_GetSourceEndpoint")
        return EndpointName(en)

    @property
    def source_id(self) -> int:
        """``ramp_GetSourceId``: the sender's index in the receiver's translation table
        (in an SPMD job, its rank; -1 if it is not mapped)."""
        v = c_int()
        _check(_L().ramp_GetSourceId(self._p(), byref(v)), "ramp_GetSourceId")
        return v.value

    @property
    def tag(self) -> int:
        """``AM_GetMsgTag``: the tag the message carried."""
        v = c_uint64()
        _check(_L().AM_GetMsgTag(self._p(), byref(v)), "AM_GetMsgTag")
        return v.value

    @property
    def endpoint(self) -> "Endpoint":
        """``AM_GetDestEndpoint``: the local endpoint that received the message."""
        h = c_void_p()
        _check(_L().AM_GetDestEndpoint(self._p(), byref(h)), "AM_GetDestEndpoint")
        return _endpoints.get(h.value or 0, self._ep)

    def reply(self, handler: int, a: int = _NO_ARG, *args: int) -> None:
        """Short reply (``AM_ReplyM``) to the requester's handler ``handler`` with 0..16 int
        args (``a`` is the first: ``reply(handler, a, b, ...)``)."""
        # the round trip's path: one int argument to a drained request
        # (ramp_DrainReply1, no argtypes: every value checked here first, so that
        # ctypes passes each as the C int it is; anything else takes the checked path).
        # _idx is -1 unless the token is a drained message's, live (an expired one
        # has _idx -1 too: the checked path raises TokenExpiredError)
        i = self._idx
        if i >= 0 and not args:
            try:
                # not an int: TypeError here (unhashable, not comparable) or
                # ctypes.ArgumentError in the call (before C runs); either way the checked
                # path below raises the usual error.  The range: |a| < 2**30, Python's
                # one-digit ints, whose comparisons are the interpreter's fast ones (the
                # rest of int32 takes the checked path); a value of another type that
                # compares as one in range (say 2.0) passes, and ctypes then refuses to
                # convert it.  (One comparison each: a chained one costs more.)
                rc = (
                    _dreply1(i, handler, a)
                    if 0 <= handler
                    and handler <= 255
                    and -0x3FFFFFFF <= a
                    and a <= 0x3FFFFFFF
                    else None
                )
            except (TypeError, ctypes.ArgumentError):
                rc = None
            if rc is not None:
                if rc:
                    if rc == _IN_USE:  # the endpoint is held: wait, the GIL released
                        rc = _Fast.dreply1(i, handler, a)
                    if rc:
                        _after(rc, "AM_Reply")
                self._replied = True
                if _pending_any:  # a reply to this endpoint itself ran its handler
                    _after(0, "AM_Reply")
                return
        if a is not _NO_ARG:
            args = (a,) + args
        p = self._ptr
        if p is None:
            raise TokenExpiredError("token used after its handler returned")
        if handler.__class__ is not int or not 0 <= handler < MAX_NUM_HANDLERS:
            handler = _handler_index(handler, "AM_Reply")
        s = _tls.s
        if len(args) == 1 and args[0].__class__ is int and _INT32_MIN <= args[0] < _UINT32_END:
            n, argv = 1, s.argv
            argv[0] = args[0]
        else:
            n, argv = _short_argv(args, "AM_Reply")
        i = self._idx
        if i >= 0 and _Fast.dreply is not None:
            rc = _Fast.dreply(i, handler, n, argv)
        else:
            rc = _Fast.reply(c_void_p(p), handler, 0, None, _SZ0, _SZ0, n, argv)
        if rc or s.pending:
            _after(rc, "AM_Reply")
        self._replied = True

    def reply_medium(self, handler: int, data: BufferLike, *args: int) -> None:
        """Medium reply (``AM_ReplyIM``): ``data`` (any bytes-like, at most MAX_MEDIUM bytes)
        is delivered in a library buffer to the requester's handler."""
        h = _handler_index(handler, "AM_ReplyI")
        n, argv = _argv(args, "AM_ReplyI")
        p = self._p()
        with SendBuffer(data) as b:
            rc = self._ep._reply(p, h, 1, b.ptr, b.nbytes, 0, n, argv)
        _after(rc, "AM_ReplyI", _size_hint(rc, b.nbytes, 1))
        self._replied = True

    def reply_long(self, handler: int, data: BufferLike, dest_offset: int, *args: int) -> None:
        """Long reply (``AM_ReplyXferM``): ``data`` is written at ``dest_offset`` bytes into the
        requester's segment, then its handler runs with a view of that range."""
        h = _handler_index(handler, "AM_ReplyXfer")
        n, argv = _argv(args, "AM_ReplyXfer")
        p = self._p()
        with SendBuffer(data) as b:
            rc = self._ep._reply(
                p, h, 2, b.ptr, b.nbytes, _offset(dest_offset, "AM_ReplyXfer"), n, argv
            )
        _after(rc, "AM_ReplyXfer", _size_hint(rc, b.nbytes, 2))
        self._replied = True

    def __repr__(self) -> str:
        if self._ptr is None:
            return "<ramp.Token (expired)>"
        return "<ramp.Token %#x>" % self._ptr


def _size_hint(rc: int, nbytes: int, cat: int) -> str:
    if rc != ErrorCode.AM_ERR_BAD_ARG:
        return ""
    from .constants import MAX_LONG, MAX_MEDIUM

    if cat == 1 and nbytes > MAX_MEDIUM:
        return (
            "payload of %d bytes exceeds the medium limit of %d: send more with a long "
            "message (request_long, into the peer's segment) or in pieces of at most "
            "ramp.MAX_MEDIUM bytes" % (nbytes, MAX_MEDIUM)
        )
    if cat == 2 and nbytes > MAX_LONG:
        return (
            "payload of %d bytes exceeds the long limit of %d: send it in pieces of at "
            "most ramp.MAX_LONG bytes" % (nbytes, MAX_LONG)
        )
    return ""


# --------------------------------------------------------------------------------------
# Handler registration
# --------------------------------------------------------------------------------------

_KINDS = {"short": "short", "medium": "medium", "long": "long", "bulk": "bulk"}
_BULK_ANNOTATIONS = {memoryview, bytes, bytearray}
_BULK_ANNOTATION_NAMES = {"memoryview", "bytes", "bytearray", "Buffer", "ramp.Buffer"}


def _resolve_kind(
    fn: Callable[..., Any], kind: Optional[Any], nargs: Optional[int]
) -> Tuple[str, int]:
    """Finds (kind, nargs) of a handler from the arguments or its signature."""
    if kind is not None:
        if isinstance(kind, Category):
            kind = kind.name.lower()
        k = _KINDS.get(str(kind).lower())
        if k is None:
            raise ValueError("kind must be 'short', 'medium', 'long' or 'bulk', not %r" % (kind,))
        kind = k
    try:
        sig: Optional[inspect.Signature] = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    if sig is None:
        if nargs is None:
            raise TypeError("cannot read the signature of %r: give nargs= (and kind=)" % (fn,))
        return kind or "short", _check_nargs(nargs)
    params = [
        p
        for p in sig.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    has_var = any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in sig.parameters.values())
    required = sum(1 for p in params if p.default is inspect.Parameter.empty)
    if kind is None:
        kind = "short"
        if len(params) >= 2:
            ann = params[1].annotation
            if ann in _BULK_ANNOTATIONS or (isinstance(ann, str) and ann in _BULK_ANNOTATION_NAMES):
                kind = "bulk"
    fixed = 1 if kind == "short" else 2
    shape = "fn(token, a0, ...)" if fixed == 1 else "fn(token, buf, a0, ...)"
    if nargs is None:
        if has_var:
            raise TypeError("%r takes *args: give nargs= (0..16)" % (fn,))
        nargs = len(params) - fixed
        if nargs < 0:
            raise TypeError(
                "a %s handler is called as %s; %r takes %d positional parameter(s)"
                % (kind, shape, fn, len(params))
            )
    nargs = _check_nargs(nargs)
    total = fixed + nargs
    if total < required or (total > len(params) and not has_var):
        raise TypeError(
            "a %s handler with nargs=%d is called as %s with %d positional arguments; "
            "%r cannot take them" % (kind, nargs, shape, total, fn)
        )
    return kind, nargs


def _check_nargs(nargs: int) -> int:
    n = int(nargs)
    if not 0 <= n <= MAX_SHORT:
        raise ValueError("nargs must be 0..16, not %d" % n)
    return n


def _describe_kind(kind: str) -> str:
    return {"short": "short", "medium": "medium", "long": "long", "bulk": "medium or long"}[kind]


_CATEGORIES = (Category.SHORT, Category.MEDIUM, Category.LONG)
_fast_token_info: Any = None
_fast_arg_count: Any = None


def _arg_count_fn() -> Any:
    """ramp_GetTokenArgCount with plain-address parameters (the trampolines' fast path)."""
    global _fast_arg_count
    if _fast_arg_count is None:
        f = _L()["ramp_GetTokenArgCount"]  # a separate function object: own argtypes
        f.argtypes = [c_void_p, c_void_p]
        f.restype = c_int
        _fast_arg_count = f
    return _fast_arg_count


def _token_info_fn() -> Any:
    """ramp_GetTokenInfo with plain-address parameters (the trampolines' fast path)."""
    global _fast_token_info
    if _fast_token_info is None:
        f = _L()["ramp_GetTokenInfo"]  # a separate function object: own argtypes
        f.argtypes = [c_void_p, c_void_p, c_void_p, c_void_p]
        f.restype = c_int
        _fast_token_info = f
    return _fast_token_info


def _play_entry(
    fn: HandlerFunction, kind: str, nargs: int
) -> Tuple[HandlerFunction, int, int, str]:
    """How _play calls fn: (fn, categories accepted as bits 1 << category,
    nargs, kind)."""
    accepts = {"short": 1, "medium": 2, "long": 4, "bulk": 6}[kind]
    return (fn, accepts, nargs, kind)


def _make_trampoline(ep: "Endpoint", fn: HandlerFunction, kind: str, nargs: int) -> Any:
    get_info = _token_info_fn()
    get_count = _arg_count_fn()
    tls = _tls

    def arity_error(tok: Token, got: int) -> HandlerKindError:
        return HandlerKindError(
            "handler %d of %s was registered for %d argument(s) but a message with %d arrived"
            % (tok.handler, ep, nargs, got)
        )

    def kind_error(tok: Token, cat: int) -> HandlerKindError:
        return HandlerKindError(
            "handler %d of %s was registered for %s messages (nargs=%d) but received a %s %s"
            % (
                tok.handler,
                ep,
                _describe_kind(kind),
                nargs,
                _CATEGORIES[cat].name.lower(),
                "request" if tok.is_request else "reply",
            )
        )

    if kind == "short":

        def short_trampoline(ptr: int, *args: int) -> None:
            tok = Token(ptr, ep)
            s = tls.s  # the calling thread's state
            s.depth += 1
            try:
                s.count += 1
                a = s.addr
                get_info(ptr, a, a + 4, a + 8)
                i = s.info
                c = i[1]
                tok._raw = (ptr, i[0] & 0xFF, c, i[2])
                if c != 0:
                    raise kind_error(tok, c)
                get_count(ptr, a + 12)
                if i[3] != nargs:
                    if _return_bad_args(ep, tok, nargs, i[3]):
                        return
                    raise arity_error(tok, i[3])
                fn(tok, *args)
            except BaseException as e:  # never unwind into C
                _defer(s, e)
            finally:
                tok._ptr = None
                s.depth -= 1

        return SHORT_PROTOS[nargs](short_trampoline)

    want_medium = kind in ("medium", "bulk")
    want_long = kind in ("long", "bulk")

    def bulk_trampoline(ptr: int, buf: Optional[int], nbytes: int, *args: int) -> None:
        tok = Token(ptr, ep)
        s = tls.s
        view: Optional[memoryview] = None
        release = False
        s.depth += 1
        try:
            s.count += 1
            a = s.addr
            get_info(ptr, a, a + 4, a + 8)
            i = s.info
            c = i[1]
            tok._raw = (ptr, i[0] & 0xFF, c, i[2])
            if c == 1 and want_medium:
                view = view_of(buf or 0, nbytes)
                release = True
            elif c == 2 and want_long:
                view = ep._long_view(buf or 0, nbytes)
            else:
                raise kind_error(tok, c)
            get_count(ptr, a + 12)
            if i[3] != nargs:
                if _return_bad_args(ep, tok, nargs, i[3]):
                    return
                raise arity_error(tok, i[3])
            fn(tok, view, *args)
        except BaseException as e:  # never unwind into C
            _defer(s, e)
        finally:
            tok._ptr = None
            s.depth -= 1
            if release and view is not None:
                try:
                    view.release()
                except BufferError:
                    pass  # the handler exported it (e.g. numpy.frombuffer): its problem

    return BULK_PROTOS[nargs](bulk_trampoline)


def _make_returned_trampoline(ep: "Endpoint") -> Any:
    tls = _tls

    def returned_trampoline(status: int, opcode: int, ptr: int) -> None:
        tok = Token(ptr, ep, returned=True)
        s = tls.s
        s.depth += 1
        try:
            s.count += 1
            _play_returned(ep, tok, status, opcode)
        except BaseException as e:  # never unwind into C
            _defer(s, e)
        finally:
            tok._ptr = None
            s.depth -= 1

    return RETURNED_PROTO(returned_trampoline)


def _play_returned(ep: "Endpoint", tok: Token, status: int, opcode: int) -> None:
    """Handler 0 for a returned message: the error handler, or ReturnedMessageError."""
    try:
        stv: Any = Status(status)
    except ValueError:
        stv = status
    try:
        op: Any = Opcode(opcode)
    except ValueError:
        op = opcode
    eh = ep._error_handler
    if eh is not None:
        eh(stv, op, tok)
        return
    handler = tag = source = None
    try:
        handler = tok.handler
        tag = tok.tag
        source = tok.source
    except RampError:
        pass
    raise ReturnedMessageError(stv, op, handler, tag, source)


# --------------------------------------------------------------------------------------
# Pull-style receive: ramp_Drain hands delivered messages to Python, which plays their
# handlers itself (no C-to-Python callback per message).  The drained messages stay held
# by the thread until its next ramp_Drain (their tokens live, their medium buffers
# allocated); Python ends a handler's Token when the handler returns, as for a
# trampoline, and ends a request its handler did not reply to with ramp_DrainEnd, so
# that its automatic reply goes out at once, as AM_Poll would send it.
# A poll inside a handler (depth > 0) uses AM_Poll: handlers then run through the
# trampolines, and the batch being played stays valid.
# --------------------------------------------------------------------------------------

class _Fast:
    """The hot calls without ctypes argtypes (argument conversion through argtypes costs
    about 0.3 us per call): called only with ints known to fit a C int, None, and ready
    argument objects (handles and arrays as byref objects made once, c_size_t zeros,
    c_int32 vectors).  Set by :func:`_fast`; ``drain`` is None with a library that lacks
    ramp_Drain.  The round trip's calls are also module globals (_don, _rshort1,
    _dreply1, _dend): a global costs less to load than a class attribute.

    The calls that keep the GIL (cheaper) are the ``Try`` forms, which never wait for an
    endpoint another thread holds: a thread running a handler holds its endpoint and
    needs the GIL for a Python one, so waiting for it with the GIL held would never end.
    They refuse with AM_ERR_IN_USE instead, and the caller repeats the call in its plain
    form, the GIL released (``end``, ``release``, ``dreply1``: see _end_drained)."""

    ready = False
    drain: Any = None
    dwait: Any = None
    don: Any = None
    release: Any = None
    end: Any = None
    dreply: Any = None
    rshort: Any = None
    dreply1: Any = None
    rshort1: Any = None
    try_release: Any = None
    try_end: Any = None
    try_dreply1: Any = None
    am_poll: Any = None
    dthread: Any = None
    request: Any = None
    reply: Any = None


_don: Any = None
_rshort1: Any = None
_dreply1: Any = None
_dend: Any = None
_SZ0 = c_size_t(0)
_IN_USE = 5  # AM_ERR_IN_USE: a Try form refused to wait (see _Fast)
_INT_END = 1 << 31


def _ptr_arg(address: int) -> Any:
    """A pointer argument for the calls without argtypes, made once: a byref object
    holding ``address`` (ctypes passes it as it is, where a c_void_p argument costs it a
    new parameter object, made and freed around every call: about 0.1 us)."""
    return byref(ctypes.c_char.from_address(address))


class _IntCall(ctypes._CFuncPtr):  # type: ignore[misc,name-defined]
    """A C function returning int, called without argtypes and without a restype
    object: ctypes then reads the result as a C int directly (a c_int restype costs a
    look-up in ctypes' format table at every call).  Releases the GIL during the call."""

    _flags_ = ctypes._FUNCFLAG_CDECL  # type: ignore[attr-defined]


class _IntCallKeepGIL(ctypes._CFuncPtr):  # type: ignore[misc,name-defined]
    """_IntCall for the calls that never block nor wait: the GIL kept (cheaper)."""

    _flags_ = ctypes._FUNCFLAG_CDECL | ctypes._FUNCFLAG_PYTHONAPI  # type: ignore[attr-defined]


def _int_call(name: str, keep_gil: bool = False) -> Any:
    """libramp's ``name`` as an _IntCall (or _IntCallKeepGIL); None when the library
    does not export it (an older one)."""
    L = _L()
    if not hasattr(L, name):
        return None
    return (_IntCallKeepGIL if keep_gil else _IntCall)((name, L))


def _fast() -> None:
    global _don, _rshort1, _dreply1, _dend
    if _Fast.ready:
        return
    _Fast.drain = _int_call("ramp_Drain")
    _Fast.release = _int_call("ramp_DrainRelease")
    _Fast.end = _int_call("ramp_DrainEnd")
    _Fast.dreply = _int_call("ramp_DrainReply")
    _Fast.rshort = _int_call("ramp_RequestShort")
    if None in (_Fast.drain, _Fast.release, _Fast.end, _Fast.dreply, _Fast.rshort):
        _Fast.drain = _Fast.release = _Fast.end = _Fast.dreply = _Fast.rshort = None
    _Fast.dwait = _int_call("ramp_DrainWait")
    # ramp_DrainWait's arguments in one struct (the thread's drain, _ThreadState): the
    # drains of polls and waits; without it (an older library) they are AM_Poll's
    _Fast.don = _int_call("ramp_DrainOn") if _Fast.drain is not None else None
    # one argument by value: each argument ctypes converts costs about 0.05 us
    _Fast.dreply1 = _int_call("ramp_DrainReply1")
    _Fast.rshort1 = _int_call("ramp_RequestShort1")
    if _Fast.dreply1 is None or _Fast.rshort1 is None:
        _Fast.dreply1 = _Fast.rshort1 = None
    # the GIL kept (see _Fast); an older library without them: the plain forms
    _Fast.try_release = _int_call("ramp_DrainTryRelease", keep_gil=True) or _Fast.release
    _Fast.try_end = _int_call("ramp_DrainTryEnd", keep_gil=True) or _Fast.end
    _Fast.try_dreply1 = _int_call("ramp_DrainTryReply1", keep_gil=True) or _Fast.dreply1
    _Fast.am_poll = _L().AM_Poll
    # the thread check of a poll's cached descriptor (_Poller); an older library
    # without it: polls never cached
    _Fast.dthread = _int_call("ramp_DrainThread", keep_gil=True) if _Fast.don else None
    _Fast.request = _int_call("ramp_RequestArgv")
    _Fast.reply = _int_call("ramp_ReplyArgv")
    _don, _dend = _Fast.don, _Fast.try_end
    # without them (an older library) the one-argument paths find None: not taken
    _rshort1 = _Fast.rshort1 or _not_taken
    _dreply1 = _Fast.try_dreply1 or _not_taken
    _Fast.ready = True


def _not_taken(*args: Any) -> None:
    """Stands for a fast call the library lacks: the caller takes its checked path."""
    return None


def _release_drained() -> None:
    """Ends this thread's drained messages now (unless their handlers are being played),
    so that no endpoint about to be freed stays held by them."""
    if _Fast.release is not None and not _tls.s.depth:
        if _Fast.try_release() == _IN_USE:
            _Fast.release()


def _end_drained(p: Any) -> None:
    """ramp_DrainEnd after its Try form refused (another thread holds the endpoint):
    the same call, the GIL released while it waits."""
    _Fast.end(p)


def _poll_bundle(b: "Bundle") -> None:
    """AM_Poll for Python: one ramp_Drain, then the drained messages' handlers, here.
    (The slow path of Endpoint.poll and Bundle.poll: it makes b's _Poller this
    thread's, for their fast path.)"""
    hp = b._hp
    if hp is None:
        raise RampError("the bundle is closed")
    s = _tls.s
    if s.depth or _don is None:
        rc = _Fast.am_poll(hp)
        if rc or s.pending:
            _after(rc, "AM_Poll")
        return
    _own_poller(s, b)
    rc = _drain_play(s, b, 0)
    if rc or s.pending:
        _after(rc, "ramp_Drain")


def _own_poller(s: _ThreadState, b: "Bundle") -> Optional[_Poller]:
    """Makes b's _Poller this thread's (s's), made at its first use, and returns it;
    None when the library gives no thread ids (an older one): polls and waits never
    cached.  (Needs _don.)"""
    h = b._handle
    d = s.pollers.get(h)
    if d is None:
        tid = s.tid
        if tid is None:
            tid = s.tid = _Fast.dthread() if _Fast.dthread is not None else 0
        if tid > 0:
            d = s.pollers[h] = _Poller(s, h, tid)
    if d is not None:
        b._poller = d
    return d


def _wait(
    b: "Bundle", until: Optional[Callable[[], bool]], timeout: Optional[float], spin: float
) -> bool:
    """Bundle.wait (and Endpoint.wait).  The first round (one ramp_DrainWait chunk, its
    handlers, one look at until()) comes before any bookkeeping: most waits of a
    request-reply exchange end there, and every instruction of it is on the round trip."""
    hp = b._hp
    if hp is None:
        raise RampError("the bundle is closed")
    s = _tls.s  # this thread's: handlers run on it
    if until is None:
        start = s.count

        def until() -> bool:
            return s.count != start

    if until():
        return True
    # the start, for a timeout; without one the spin's window may start after the first
    # round (up to one chunk later): a clock read less on the round trip
    t0 = None if timeout is None else time.monotonic()
    if _don is not None and not s.depth and spin >= _SPIN_CHUNK_S:
        rc = _drain_play(s, b)
        if rc or s.pending:
            _after(rc, "ramp_DrainWait")
        if until():
            return True
    return _wait_loop(b, until, timeout, spin, s, t0)


def _wait_loop(
    b: "Bundle",
    until: Callable[[], bool],
    timeout: Optional[float],
    spin: float,
    s: _ThreadState,
    t0: Optional[float],
) -> bool:
    """The rest of _wait: polls (spinning in the library between looks at until()) until
    until() is true or the timeout expires; blocks in AM_WaitSema after ``spin`` seconds
    without a handler run (no timeout), or sleeps in short steps (with one).  ``t0``: when
    the wait began (None: now; given whenever there is a timeout)."""
    monotonic = time.monotonic
    if t0 is None:
        t0 = monotonic()
    deadline = None if timeout is None else t0 + timeout
    spin_end: Optional[float] = t0 + spin
    seen = s.count
    # spin in the library between looks at until() (at most 100 us at a time, as
    # handlers, which alone make until() true, run only after a message came)
    spin_us = max(0, min(_SPIN_CHUNK_US, int(spin * 1e6)))
    drains = _don is not None and spin_us > 0
    # this thread's cached descriptor of b for the usual spin (see _Poller): no eb
    # compared and rewritten per drain
    wp = wi = None
    if drains and spin_us == _SPIN_CHUNK_US and not s.depth:
        d = _own_poller(s, b)
        if d is not None:
            wp, wi = d.wp, d.wi
    while True:
        if drains and not s.depth:  # _wait_bundle, here (one call less per message)
            if b._hp is None:
                raise RampError("the bundle is closed")
            if wp is not None:
                n = _don(wp)  # the count, or minus the error code
                if n > 0:
                    _play(s, n)
                    rc = 0
                else:
                    rc = _drain_failed(s, n, wi) if n else 0
            else:
                rc = _drain_play(s, b, spin_us)
            if rc or s.pending:
                _after(rc, "ramp_DrainWait")
        else:
            _poll_bundle(b)
        if until():
            return True
        c = s.count
        if c != seen and deadline is None:
            # progress: keep spinning; the window restarts at the next look that finds
            # none (a chunk later at most), so a busy wait reads no clock per message
            seen = c
            spin_end = None
            continue
        now = monotonic()
        if deadline is not None and now >= deadline:
            return False
        if c != seen:  # progress: keep spinning
            seen = c
            spin_end = now + spin
        elif spin_end is None:
            spin_end = now + spin
        elif now >= spin_end:
            if deadline is None:
                b.wait_sema()
            else:
                time.sleep(min(0.0002, max(0.0, deadline - now)))
            if until():
                return True


_head = _MSG_HEAD.unpack_from
_refs = sys.getrefcount


def _drain_failed(s: _ThreadState, n: int, di: memoryview) -> int:
    """A drain that returned minus an error code ``n``: plays the messages it handed
    out all the same (their count in its struct, ``di``), returns the code."""
    count = di[5]
    if count > 0:
        _play(s, count)
    return -n


def _drain_play(s: _ThreadState, b: "Bundle", spin_us: int = _SPIN_CHUNK_US) -> int:
    """Drains bundle b with this thread's own descriptors (ramp_DrainOn: ramp_DrainWait,
    spinning in the library up to spin_us microseconds while nothing arrives; 0: one
    ramp_Drain), then plays what it handed out (_play).  Returns the drain's error code
    (0: none).  For the paths without the bundle's cached descriptor (_Poller): the
    first poll or wait of a thread, an older library."""
    h = b._handle
    if s.drain_eb != h:
        s.drain_q[0] = s.poll_q[0] = s.drain_eb = h
    # the count, or minus the error code (the count then in the struct)
    if spin_us == _SPIN_CHUNK_US:
        n = _don(s.drain_p)
    else:
        n = _drain_other(s, spin_us)
    if n > 0:
        _play(s, n)
        return 0
    return _drain_failed(s, n, s.drain_i if spin_us else s.poll_i) if n else 0


def _play(s: _ThreadState, n: int) -> None:
    """Plays the n (> 0) messages of this thread's last drain (s.msgs) here, in order.
    A request not replied to by its handler is ended (ramp_DrainEnd: its automatic
    reply) as soon as the handler returns, as AM_Poll would.  (The hot path of every
    Python receive, kept lean: every instruction between the drain's return and the
    handler is on the round trip.  A short message of at most 2 arguments to a short
    handler of as many arguments, found in the endpoint's ``_quick`` table, is played
    from the record's head alone, with the thread's spare Token (below); anything else
    reads the whole record, in _play_one.  Endpoint.poll and Endpoint.wait play a drain
    of one quick message themselves, with a copy of this loop's body: keep in step.)"""
    msgs = s.msgs_view
    # depth counts this thread's running handlers (a poll inside one uses AM_Poll)
    s.depth += 1
    i = 0
    try:
        # n > 0: the loop's test at its end (one comparison less for the usual 1)
        while True:
            tp, eid, a0, a1, kind = _head(msgs, i * 112)  # 112: _MSG_SIZE
            try:
                ep = _endpoints[eid]
            except KeyError:  # freed meanwhile, or not made by this package: not played
                ep = q = None
                _end_request(tp)
            else:
                # kind: handler | nargs << 16 | flags << 24 (category 0, short; flags 0
                # or 1, not returned) for a quick one: (its function, nargs)
                try:
                    q = ep._quick[kind]
                except KeyError:
                    q = _not_quick(eid, kind)
            if q is None:
                if ep is not None:
                    tok = Token(tp, ep, kind >= _KIND_RETURNED, i)
                    _play_one(s, ep, tok, _MSG.unpack_from(msgs, i * 112))
            else:
                fn, k = q
                # s.spare: the Token of an earlier message that nothing kept after its
                # handler returned (nobody else can see it, so it is not even expired),
                # made this message's (no nested drain runs while depth > 0, so it stays
                # this message's until it is done)
                tok = s.spare
                if tok is None:
                    tok = s.spare = Token(tp, ep, False, i)
                else:
                    tok._ptr = tp
                    tok._ep = ep
                    tok._idx = i
                try:
                    if k == 1:
                        fn(tok, a0)
                    elif k:
                        fn(tok, a0, a1)
                    else:
                        fn(tok)
                except BaseException as e:  # what a trampoline would do: raised after the call
                    _defer(s, e)
                if _refs(tok) != 3:
                    # kept by someone (3: s.spare, tok and the argument; a handler that
                    # raised is kept by its traceback): expired, never handed out again
                    _expire(s, tok, tp, kind)
                elif kind >= _KIND_REQUEST:  # only a request's token can have replied
                    if tok._replied:
                        tok._replied = False
                    else:
                        _end_request(tp)
            i += 1
            if i >= n:
                break
    except BaseException:
        # raised between a handler's return and its token's check above (say a
        # KeyboardInterrupt): the spare token may be kept: expired, not reused
        _expire_spare(s)
        raise
    finally:
        s.depth -= 1
        s.count += n  # after the handlers: nothing on the way to the first one


def _not_quick(eid: int, kind: int) -> None:
    """A drained message whose endpoint (``eid``) or ``kind`` its quick table does not
    hold: the kind is entered there as None (not quick: _play_one's), so that the next
    message of that kind finds it without an exception (up to 1024 entries;
    Endpoint._set_play drops a handler's); None."""
    ep = _endpoints.get(eid)
    if ep is not None:
        q = ep._quick
        if len(q) < 1024:
            q[kind] = None
    return None


def _expire(s: _ThreadState, tok: Token, tp: int, kind: int) -> None:
    """The spare token ``tok`` of a played quick message, kept by someone after its
    handler returned: expired, never handed out again; its request, if the handler
    did not reply, ended (its automatic reply)."""
    tok._ptr = None
    tok._idx = -1
    s.spare = None
    if kind >= _KIND_REQUEST and not tok._replied:
        _end_request(tp)


def _expire_spare(s: _ThreadState) -> None:
    """The spare token after an exception raised between a handler's return and the
    check of its token (say a KeyboardInterrupt): it may be kept, so expired, not
    reused."""
    tok = s.spare
    if tok is not None:
        tok._ptr = None
        tok._idx = -1
        s.spare = None


def _end_request(tp: int) -> None:
    """ramp_DrainEnd of the drained message whose token is ``tp`` (a request not
    replied to: its automatic reply goes out now), in its Try form first."""
    p = c_void_p(tp)
    if _dend(p) == _IN_USE:
        _end_drained(p)


def _drain_other(s: _ThreadState, spin_us: int) -> int:
    """ramp_DrainOn with a spin other than _SPIN_CHUNK_US: a poll's own struct (0), or
    the wait's with that spin for this call."""
    if not spin_us:
        return _don(s.poll_p)
    di = s.drain_i
    di[6] = spin_us
    try:
        return _don(s.drain_p)
    finally:
        di[6] = _SPIN_CHUNK_US


def _play_one(s: _ThreadState, ep: "Endpoint", tok: Token, m: Tuple[int, ...]) -> None:
    """Plays one drained message from its whole record ``m`` (_MSG): returned messages,
    medium and long ones, many arguments, and the errors (no function, wrong kind or
    argument count)."""
    flags = m[26]  # 1: request, 2: returned
    view = None
    try:
        if flags > 1:
            _play_returned(ep, tok, m[21], m[22])
            return
        play = ep._play[m[23]]
        if play is None:
            raise _no_function(ep, m[23], m[24], flags)
        fn, accepts, nargs, kind = play
        cat = m[24]
        if not accepts >> cat & 1:
            raise _kind_error(ep, tok, kind, nargs, cat)
        if m[25] != nargs:
            if _return_bad_args(ep, tok, nargs, m[25]):
                return
            raise _arity_error(ep, tok, nargs, m[25])
        if cat == 0:
            fn(tok, *m[4 : 4 + nargs])
        else:
            if cat == 1:
                view = view_of(m[2], m[3])
            else:
                view = ep._long_view(m[2], m[3])
            fn(tok, view, *m[4 : 4 + nargs])
    except BaseException as e:  # what a trampoline would do: raised after the call
        _defer(s, e)
    finally:
        tok._ptr = None
        tok._idx = -1
        if flags == 1 and not tok._replied:
            _end_request(m[0])
        if view is not None and m[24] == 1:
            try:
                view.release()
            except BufferError:
                pass  # the handler exported it (e.g. numpy.frombuffer): its problem


def _no_function(ep: "Endpoint", h: int, cat: int, flags: int) -> HandlerKindError:
    return HandlerKindError(
        "handler %d of %s has no Python function (a %s %s was not handled)"
        % (h, ep, _CATEGORIES[cat].name.lower(), "request" if flags & 1 else "reply")
    )


def _kind_error(ep: "Endpoint", tok: Token, kind: str, nargs: int, cat: int) -> HandlerKindError:
    return HandlerKindError(
        "handler %d of %s was registered for %s messages (nargs=%d) but received a %s %s"
        % (
            tok.handler,
            ep,
            _describe_kind(kind),
            nargs,
            _CATEGORIES[cat].name.lower(),
            "request" if tok.is_request else "reply",
        )
    )


def _return_bad_args(ep: "Endpoint", tok: Token, nargs: int, got: int) -> bool:
    """A message whose argument count does not fit its handler goes back to its sender,
    whose handler 0 gets EBADARGS (``ramp_ReturnMessage``); this endpoint says so on
    stderr and keeps running.  False when it cannot go back (a message this endpoint
    sent itself): the caller raises HandlerKindError here instead."""
    if _L().ramp_ReturnMessage(c_void_p(tok._ptr), int(Status.EBADARGS)) != 0:
        return False
    tok._replied = True
    sys.stderr.write(
        "ramp: handler %d of %s takes %d argument(s); a %s with %d came and was returned "
        "to its sender (EBADARGS)\n"
        % (tok.handler, ep, nargs, "request" if tok.is_request else "reply", got)
    )
    return True


def _arity_error(ep: "Endpoint", tok: Token, nargs: int, got: int) -> HandlerKindError:
    return HandlerKindError(
        "handler %d of %s was registered for %d argument(s) but a message with %d arrived"
        % (tok.handler, ep, nargs, got)
    )


# --------------------------------------------------------------------------------------
# Bundles and endpoints
# --------------------------------------------------------------------------------------

# Live objects by handle.  Strong references: an endpoint's ctypes callbacks must live
# as long as the C endpoint may call them, i.e. until it is closed.
_bundles: Dict[int, "Bundle"] = {}
_endpoints: Dict[int, "Endpoint"] = {}


class Bundle:
    """An AM-2 bundle: a set of endpoints polled together.

    ``Bundle(mode)`` calls ``AM_Init`` and ``AM_AllocateBundle``; :meth:`close` (or
    leaving a ``with`` block) frees the bundle, every endpoint in it, and undoes the
    ``AM_Init``.  ``mode`` is :data:`AM_SEQ` (one thread at a time) or :data:`AM_PAR`
    (many threads).
    """

    def __init__(self, mode: int = AM_SEQ) -> None:
        L = _L()
        _check(L.AM_Init(), "AM_Init")
        h = c_void_p()
        rc = L.AM_AllocateBundle(int(mode), byref(h))
        if rc:
            L.AM_Terminate()
            raise error_for(rc, "AM_AllocateBundle")
        self._handle: Optional[int] = h.value
        self._hp: Any = _ptr_arg(h.value or 0)
        self._poller: Any = _NO_POLLER  # see _Poller
        _fast()
        self._mode = int(mode)
        self._owned = True
        self._endpoints: Dict[int, Endpoint] = {}
        _bundles[self._handle or 0] = self

    @classmethod
    def _wrap(cls, handle: int, mode: int = AM_SEQ) -> "Bundle":
        """A Bundle object for a bundle allocated elsewhere (SPMD start-up); not owned."""
        b = cls.__new__(cls)
        b._handle = handle
        b._hp = _ptr_arg(handle)
        b._poller = _NO_POLLER
        _fast()
        b._mode = mode
        b._owned = False
        b._endpoints = {}
        _bundles[handle] = b
        return b

    # -- properties ----------------------------------------------------------------

    @property
    def handle(self) -> int:
        """The raw ``eb_t`` value (for passing to C code)."""
        return self._h()

    @property
    def mode(self) -> int:
        """:data:`AM_SEQ` or :data:`AM_PAR`."""
        return self._mode

    @property
    def closed(self) -> bool:
        """Whether the bundle was freed."""
        return self._handle is None

    @property
    def endpoints(self) -> List["Endpoint"]:
        """The endpoints currently in this bundle."""
        return list(self._endpoints.values())

    @property
    def event_mask(self) -> int:
        """``AM_GetEventMask`` / ``AM_SetEventMask``: :data:`AM_NOEVENTS` or :data:`AM_NOTEMPTY`."""
        m = c_int()
        _check(_L().AM_GetEventMask(self._h(), byref(m)), "AM_GetEventMask")
        return m.value

    @event_mask.setter
    def event_mask(self, mask: int) -> None:
        _check(_L().AM_SetEventMask(self._h(), int(mask)), "AM_SetEventMask")

    def _h(self) -> int:
        h = self._handle
        if h is None:
            raise RampError("the bundle is closed")
        return h

    # -- endpoints -----------------------------------------------------------------

    def allocate_endpoint(self) -> "Endpoint":
        """``AM_AllocateEndpoint``: a new endpoint in this bundle (same as ``Endpoint(bundle)``)."""
        return Endpoint(self)

    # -- progress ------------------------------------------------------------------

    def poll(self) -> None:
        """``AM_Poll``: receives and dispatches pending messages (handlers run here)."""
        # Endpoint.poll's fast path, here (keep in step; Endpoint.poll also plays a
        # drain of one quick message itself, where this calls _play)
        d = self._poller
        s = d.s
        if not s.depth:
            n = _don(d.p)
            if n >= 0:
                if n:
                    _play(s, n)
                if _pending_any:  # a handler raised (this thread's, or another's)
                    _after(0, "ramp_Drain")
                return
            if n != _DRAIN_NOT_MINE:
                _after(_drain_failed(s, n, d.i), "ramp_Drain")
                return
        _poll_bundle(self)

    def wait_sema(self) -> None:
        """``AM_WaitSema``: sleeps until a message arrives, then polls once.

        Sets the event mask to :data:`AM_NOTEMPTY` first.  It has no timeout: use
        :meth:`wait` with ``timeout`` for that.
        """
        L = _L()
        h = self._h()
        _check(L.AM_SetEventMask(h, AM_NOTEMPTY), "AM_SetEventMask")
        rc = L.AM_WaitSema(h)
        _after(rc, "AM_WaitSema")

    def wait(
        self,
        until: Optional[Callable[[], bool]] = None,
        timeout: Optional[float] = None,
        spin: float = 0.0005,
    ) -> bool:
        """Polls until ``until()`` is true; returns True, or False when ``timeout`` expired.

        Without ``until``, waits until at least one Python handler (or error handler)
        ran on this thread.  The loop polls; after ``spin`` seconds in which no handler
        ran it blocks in ``AM_WaitSema`` (no CPU used) when there is no ``timeout``, or
        sleeps in short steps otherwise.  ``until`` must become true through handlers (or
        other threads, with a ``timeout``): a blocked wait wakes only on messages.
        """
        # the first round of a wait without timeout, on the bundle's cached descriptor
        # when it is this thread's (as poll: see _Poller); anything else, and a thread
        # with handlers running, a closed bundle or one not polled yet: _wait.  The
        # clock is read only after this round (a timeout starts before it: _wait).
        # (Endpoint.wait: the same, then _wait_loop's rounds in its own loop, a drain
        # of one quick message played there, not by _play: keep in step)
        d = self._poller
        s = d.s
        if s.depth or until is None or timeout is not None or not spin >= _SPIN_CHUNK_S:
            return _wait(self, until, timeout, spin)
        if until():
            return True
        n = _don(d.wp)  # the count, or minus the error code
        if n >= 0:
            if n:
                _play(s, n)
            if _pending_any:  # a handler raised (this thread's, or another's)
                _after(0, "ramp_DrainWait")
            if until():
                return True
            return _wait_loop(self, until, None, spin, s, None)
        if n != _DRAIN_NOT_MINE:  # (RAMP_DRAIN_NOT_MINE: another thread's: nothing done)
            _after(_drain_failed(s, n, d.wi), "ramp_DrainWait")
        return _wait_loop(self, until, None, spin, _tls.s, None)

    # -- lifetime ------------------------------------------------------------------

    def close(self) -> None:
        """``AM_FreeBundle`` (frees every endpoint in it) and the matching ``AM_Terminate``.

        Idempotent.  A bundle made by SPMD start-up belongs to the job and is not freed.
        """
        if self._handle is None or not self._owned:
            return
        L = _L()
        _release_drained()
        rc = L.AM_FreeBundle(self._handle)
        if rc and rc != ErrorCode.AM_ERR_BAD_ARG:  # BAD_ARG: already freed by AM_Terminate
            raise error_for(rc, "AM_FreeBundle")
        self._forget()
        L.AM_Terminate()
        _sweep()

    free = close

    def _forget(self) -> None:
        for ep in list(self._endpoints.values()):
            ep._forget()
        _bundles.pop(self._handle or 0, None)
        _tls.s.pollers.pop(self._handle, None)  # (another thread's: refused, harmless)
        self._handle = None
        self._hp = None
        self._poller = _NO_POLLER

    def __enter__(self) -> "Bundle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._handle is None:
            return "<ramp.Bundle (closed)>"
        return "<ramp.Bundle %#x %s, %d endpoint(s)>" % (
            self._handle,
            "AM_PAR" if self._mode else "AM_SEQ",
            len(self._endpoints),
        )


class Endpoint:
    """An AM-2 endpoint: a translation table, a handler table, a tag and a segment.

    ``Endpoint(bundle)`` calls ``AM_AllocateEndpoint``; :meth:`close` (or leaving a
    ``with`` block) frees it, with its handlers and its hold on the segment.  A new
    endpoint has tag :data:`AM_NONE` (it accepts nothing until :attr:`tag` is set), no
    segment, an empty 256-entry translation table, and a Python handler 0 that
    turns returned messages into :class:`ReturnedMessageError` (see
    :meth:`set_error_handler`).  Typical set-up: :meth:`map` the peers, set
    :attr:`tag`, register handlers, :meth:`set_expected_resources`, then send and poll.
    """

    def __init__(self, bundle: Bundle) -> None:
        L = _L()
        h = c_void_p()
        en = en_t()
        _check(L.AM_AllocateEndpoint(bundle._h(), byref(h), byref(en)), "AM_AllocateEndpoint")
        self._setup(h.value or 0, bundle, EndpointName(en), owned=True)

    def _setup(
        self, handle: int, bundle: Bundle, name: Optional[EndpointName], owned: bool
    ) -> None:
        L = _L()
        self._request = L.ramp_RequestArgv
        self._reply = L.ramp_ReplyArgv
        self._poll = L.AM_Poll
        self._handle: Optional[int] = handle
        self._hp: Any = _ptr_arg(handle)
        _fast()
        self._bundle = bundle
        self._name = name
        self._owned = owned
        self._callbacks: Dict[int, Any] = {}
        self._functions: Dict[int, Tuple[HandlerFunction, str, int]] = {}
        # per handler index: how drained messages play it (see _play)
        self._play: List[Optional[Tuple[Any, int, int, str]]] = [None] * 256
        # short handlers of 0..2 arguments, by the drained record's kind: handler |
        # nargs << 16 | flags << 24, flags 0 (reply) or 1 (request): (fn, nargs); None
        # for the other kinds drained so far (see _play, _not_quick)
        self._quick: Dict[int, Optional[Tuple[HandlerFunction, int]]] = {}
        self._retired: List[Any] = []
        self._error_handler: Optional[ErrorHandlerFunction] = None
        self._segment: Any = None
        self._seg_flat: Optional[memoryview] = None
        self._seg_addr = 0
        self._seg_pin: Any = None
        # the segment is memory ramp allocated (alloc_segment): freed when replaced
        self._seg_allocated = False
        bundle._endpoints[handle] = self
        _endpoints[handle] = self
        # Handler 0: always a Python trampoline (the library's default aborts).
        self._returned_cb = _make_returned_trampoline(self)
        _check(
            _L()._AM_SetHandler(handle, 0, ctypes.cast(self._returned_cb, c_void_p)),
            "AM_SetHandler",
            "handler 0",
        )

    @classmethod
    def _wrap(cls, handle: int, bundle: Bundle, name: Optional[EndpointName] = None) -> "Endpoint":
        """An Endpoint object for an endpoint allocated elsewhere (SPMD start-up); not owned."""
        ep = cls.__new__(cls)
        ep._setup(handle, bundle, name, owned=False)
        return ep

    def _h(self) -> int:
        h = self._handle
        if h is None:
            raise RampError("the endpoint is closed")
        return h

    # -- identity ------------------------------------------------------------------

    @property
    def handle(self) -> int:
        """The raw ``ep_t`` value (for passing to C code)."""
        return self._h()

    @property
    def bundle(self) -> Bundle:
        """The bundle the endpoint is in (changes with :meth:`move`)."""
        return self._bundle

    @property
    def name(self) -> EndpointName:
        """The endpoint's global name (what peers :meth:`map`)."""
        if self._name is None:
            en = en_t()
            _check(_L().ramp_GetEndpointName(self._h(), byref(en)), "ramp_GetEndpointName")
            self._name = EndpointName(en)
        return self._name

    @property
    def closed(self) -> bool:
        """Whether the endpoint was freed."""
        return self._handle is None

    # -- tag -----------------------------------------------------------------------

    @property
    def tag(self) -> int:
        """``AM_GetTag`` / ``AM_SetTag``: the tag messages must carry to be accepted
        (:data:`AM_NONE`: nothing, :data:`AM_ALL`: anything)."""
        t = c_uint64()
        _check(_L().AM_GetTag(self._h(), byref(t)), "AM_GetTag")
        return t.value

    @tag.setter
    def tag(self, tag: int) -> None:
        _check(_L().AM_SetTag(self._h(), int(tag)), "AM_SetTag")

    # -- translation table ---------------------------------------------------------

    def map(self, index: int, name: EndpointName, tag: int) -> None:
        """``AM_Map``: translation entry ``index`` sends to ``name`` with ``tag``."""
        _check(_L().AM_Map(self._h(), int(index), name._en, int(tag)), "AM_Map", "index %d" % index)

    def map_any(self, name: EndpointName, tag: int) -> int:
        """``AM_MapAny``: maps the lowest free entry to ``(name, tag)``; returns its index."""
        i = c_int()
        _check(_L().AM_MapAny(self._h(), byref(i), name._en, int(tag)), "AM_MapAny")
        return i.value

    def unmap(self, index: int) -> None:
        """``AM_UnMap``: frees translation entry ``index``."""
        _check(_L().AM_UnMap(self._h(), int(index)), "AM_UnMap", "index %d" % index)

    @property
    def num_translations(self) -> int:
        """``AM_GetNumTranslations`` / ``AM_SetNumTranslations``: the table size (at least 256)."""
        n = c_int()
        _check(_L().AM_GetNumTranslations(self._h(), byref(n)), "AM_GetNumTranslations")
        return n.value

    @num_translations.setter
    def num_translations(self, n: int) -> None:
        _check(_L().AM_SetNumTranslations(self._h(), int(n)), "AM_SetNumTranslations")

    def translation_in_use(self, index: int) -> bool:
        """``AM_GetTranslationInuse``: whether entry ``index`` is mapped."""
        rc = _L().AM_GetTranslationInuse(self._h(), int(index))
        if rc == ErrorCode.AM_OK:
            return True
        if rc == ErrorCode.AM_ERR_RESOURCE:
            return False
        raise error_for(rc, "AM_GetTranslationInuse", "index %d" % index)

    def translation_tag(self, index: int) -> int:
        """``AM_GetTranslationTag``: the tag sent with messages to entry ``index``."""
        t = c_uint64()
        _check(
            _L().AM_GetTranslationTag(self._h(), int(index), byref(t)),
            "AM_GetTranslationTag",
            "index %d" % index,
        )
        return t.value

    def translation_name(self, index: int) -> EndpointName:
        """``AM_GetTranslationName``: the name entry ``index`` is mapped to."""
        en = en_t()
        _check(
            _L().AM_GetTranslationName(self._h(), int(index), byref(en)),
            "AM_GetTranslationName",
            "index %d" % index,
        )
        return EndpointName(en)

    def set_translation_tag(self, index: int, tag: int) -> None:
        """``ramp_SetTranslationTag``: changes entry ``index``'s tag (legal at any time)."""
        _check(
            _L().ramp_SetTranslationTag(self._h(), int(index), int(tag)),
            "ramp_SetTranslationTag",
            "index %d" % index,
        )

    def set_expected_resources(self, n_endpoints: int = 0, depth: int = 32) -> None:
        """``AM_SetExpectedResources``: freezes the translation table; required once
        before any poll, request or reply.  ``depth``: outstanding requests per peer
        (1..1024); ``n_endpoints`` is ignored by ramp."""
        _check(
            _L().AM_SetExpectedResources(self._h(), int(n_endpoints), int(depth)),
            "AM_SetExpectedResources",
        )

    # -- handlers ------------------------------------------------------------------

    def set_handler(
        self,
        index: int,
        fn: HandlerFunction,
        kind: Optional[str] = None,
        nargs: Optional[int] = None,
    ) -> None:
        """``AM_SetHandler``: registers Python function ``fn`` at handler ``index`` (1..255).

        ``kind`` is ``"short"``, ``"medium"``, ``"long"`` or ``"bulk"`` (medium or long) and
        ``nargs`` the number of int arguments (0..16); both default to what ``fn``'s
        signature says (see the module documentation).  Index 0 is the returned-message
        handler: it is the same as :meth:`set_error_handler`.  The callback stays alive
        until the endpoint is closed (also when replaced).
        """
        h = _handler_index(index, "AM_SetHandler")
        if h == 0:
            self.set_error_handler(fn)
            return
        kind, nargs = _resolve_kind(fn, kind, nargs)
        cb = _make_trampoline(self, fn, kind, nargs)
        _check(_L()._AM_SetHandler(self._h(), h, ctypes.cast(cb, c_void_p)), "AM_SetHandler")
        old = self._callbacks.get(h)
        if old is not None:
            self._retired.append(old)  # it may be running right now
        self._callbacks[h] = cb
        self._functions[h] = (fn, kind, nargs)
        self._set_play(h, fn, kind, nargs)

    def _set_play(self, h: int, fn: HandlerFunction, kind: str, nargs: int) -> None:
        """How drained messages to handler h play fn (_play)."""
        self._play[h] = _play_entry(fn, kind, nargs)
        for k in [k for k in self._quick if k & 0xFF == h]:
            del self._quick[k]
        if kind == "short" and nargs <= 2:  # a reply (flags 0) and a request (flags 1)
            self._quick[h | nargs << 16] = self._quick[h | nargs << 16 | _KIND_REQUEST] = (
                fn,
                nargs,
            )

    def set_handler_any(
        self, fn: HandlerFunction, kind: Optional[str] = None, nargs: Optional[int] = None
    ) -> int:
        """``AM_SetHandlerAny``: registers ``fn`` at the first free index in 1..255; returns it."""
        kind, nargs = _resolve_kind(fn, kind, nargs)
        cb = _make_trampoline(self, fn, kind, nargs)
        hv = c_uint8()
        _check(
            _L()._AM_SetHandlerAny(self._h(), byref(hv), ctypes.cast(cb, c_void_p)),
            "AM_SetHandlerAny",
        )
        self._callbacks[hv.value] = cb
        self._functions[hv.value] = (fn, kind, nargs)
        self._set_play(hv.value, fn, kind, nargs)
        return hv.value

    def handler(
        self,
        index: Optional[int] = None,
        *,
        kind: Optional[str] = None,
        nargs: Optional[int] = None,
    ) -> Callable[[HandlerFunction], HandlerFunction]:
        """Decorator form of :meth:`set_handler` (or :meth:`set_handler_any` without ``index``;
        the chosen index is stored as the function's ``am_handler`` attribute)."""

        def register(fn: HandlerFunction) -> HandlerFunction:
            if index is None:
                i = self.set_handler_any(fn, kind, nargs)
            else:
                self.set_handler(index, fn, kind, nargs)
                i = index
            try:
                fn.am_handler = i  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                pass
            return fn

        return register

    @property
    def handlers(self) -> Dict[int, Tuple[HandlerFunction, str, int]]:
        """The Python handlers registered here: ``{index: (fn, kind, nargs)}``."""
        return dict(self._functions)

    def set_error_handler(self, fn: Optional[ErrorHandlerFunction]) -> None:
        """Installs the Python handler for returned (undeliverable) messages: handler 0.

        ``fn(status, opcode, token)`` gets a :class:`Status` (e.g. ``EBADTAG``), an
        :class:`Opcode` and the returned message's token (which can be interrogated
        but not replied to).  With ``None`` (the default), a returned message raises
        :class:`ReturnedMessageError` from the call that handled it.
        """
        if fn is not None and not callable(fn):
            raise TypeError("the error handler must be callable")
        self._error_handler = fn

    # -- remote memory regions ramp allocates ---------------------------------------

    def alloc_region(self, nbytes: int, access: int = 3) -> Any:
        """``ramp_AllocRegion``: :func:`ramp.rma.alloc_region` on this endpoint
        (zeroed memory ramp allocates, registered with ``access``, which same-host
        peers map; ``region.buffer`` views it in place)."""
        return _regions.alloc_region(self, nbytes, access)

    def alloc_segment(self, nbytes: int) -> Any:
        """``ramp_AllocSegment``: :func:`ramp.rma.alloc_segment` on this endpoint (the
        AM-2 segment in zeroed memory ramp allocates, which same-host peers map: their
        long requests are one memcpy; returns a ctypes array over it)."""
        return _regions.alloc_segment(self, nbytes)

    def _segment_replaceable(self, fn: str) -> None:
        # an allocated segment is freed when replaced: not while referred to (the
        # attribute, getrefcount's argument, and _seg_flat's export are 3)
        if self._seg_allocated and sys.getrefcount(self._segment) > 3:
            raise BadArgError(
                ErrorCode.AM_ERR_BAD_ARG,
                fn,
                "the allocated segment is still referred to (numpy arrays, memoryviews): drop them first",
            )

    # -- segment -------------------------------------------------------------------

    def set_segment(self, buffer: Optional[BufferLike]) -> None:
        """``AM_SetSeg``: long messages to this endpoint land in ``buffer``.

        ``buffer`` is a writable, C-contiguous buffer: a ``bytearray``, a numpy array,
        an ``array.array``, an ``mmap``...  It is used in place (no copy) and pinned
        (it cannot be resized) until another segment is set or the endpoint is closed.
        ``None`` removes the segment.
        """
        h = self._h()
        self._segment_replaceable("AM_SetSeg")
        if buffer is None:
            _check(_L().AM_SetSeg(h, None, 0), "AM_SetSeg")
            self._segment = self._seg_flat = self._seg_pin = None
            self._seg_addr = 0
            self._seg_allocated = False
            return
        flat, addr, pin = flat_writable(buffer)
        _check(_L().AM_SetSeg(h, addr or None, flat.nbytes), "AM_SetSeg")
        self._segment, self._seg_flat, self._seg_addr, self._seg_pin = buffer, flat, addr, pin
        self._seg_allocated = False

    @property
    def segment(self) -> Any:
        """The object given to :meth:`set_segment` (None if none)."""
        return self._segment

    @property
    def segment_info(self) -> Tuple[int, int]:
        """``AM_GetSeg``: the segment's (address, length in bytes) as the library sees it."""
        a, n = c_void_p(), c_size_t()
        _check(_L().AM_GetSeg(self._h(), byref(a), byref(n)), "AM_GetSeg")
        return (a.value or 0, n.value)

    def _long_view(self, address: int, nbytes: int) -> memoryview:
        flat = self._seg_flat
        if flat is not None and self._seg_addr:
            off = address - self._seg_addr
            if 0 <= off and off + nbytes <= flat.nbytes:
                return flat[off : off + nbytes]
        return view_of(address, nbytes)

    # -- messages ------------------------------------------------------------------

    def request(self, dest: int, handler: int, a: int = _NO_ARG, *args: int) -> None:
        """Short request (``AM_RequestM``) to translation entry ``dest``, handler ``handler``,
        with 0..16 int arguments (``a`` is the first: ``request(dest, handler, a, b,
        ...)``).  Polls first (handlers may run) and blocks (polling) while no send credit
        is free."""
        hp = self._hp
        # the round trip's path: one int argument (ramp_RequestShort1, no argtypes: every
        # value's range checked here first, so that ctypes passes each as the C int it
        # is, and the handle a pointer argument made once; anything else takes the
        # checked path)
        if not args and hp is not None:
            try:
                # not an int: TypeError here (unhashable, not comparable) or
                # ctypes.ArgumentError in the call (before C runs); either way the checked
                # path below raises the usual error.  The ranges: below 2**30, Python's
                # one-digit ints, whose comparisons are the interpreter's fast ones (the
                # rest of int32 takes the checked path); a value of another type that
                # compares as one in range (say 2.0) passes, and ctypes then refuses to
                # convert it.  (One comparison each: a chained one costs more.)
                rc = (
                    _rshort1(hp, dest, handler, a)
                    if 0 <= handler
                    and handler <= 255
                    and -0x3FFFFFFF <= a
                    and a <= 0x3FFFFFFF
                    and 0 <= dest
                    and dest <= 0x3FFFFFFF
                    else None
                )
            except (TypeError, ctypes.ArgumentError):
                rc = None
            if rc is not None:
                if rc or _pending_any:
                    _after(rc, "AM_Request")
                return
        if a is not _NO_ARG:
            args = (a,) + args
        if hp is None:
            raise RampError("the endpoint is closed")
        if handler.__class__ is not int or not 0 <= handler < MAX_NUM_HANDLERS:
            handler = _handler_index(handler, "AM_Request")
        s = _tls.s
        if len(args) == 1 and args[0].__class__ is int and _INT32_MIN <= args[0] < _UINT32_END:
            n, argv = 1, s.argv
            argv[0] = args[0]
        else:
            n, argv = _short_argv(args, "AM_Request")
        if dest.__class__ is int and 0 <= dest < _INT_END:
            f = _Fast.rshort
            if f is not None:
                rc = f(hp, dest, handler, n, argv)
            else:
                rc = _Fast.request(hp, dest, handler, 0, None, _SZ0, _SZ0, 0, n, argv)
        else:
            d = _dest_index(dest, "AM_Request")
            rc = self._request(self._handle, d, handler, 0, None, 0, 0, 0, n, argv)
        if rc or s.pending:
            _after(rc, "AM_Request")

    def request_medium(self, dest: int, handler: int, data: BufferLike, *args: int) -> None:
        """Medium request (``AM_RequestIM``): ``data`` (bytes, bytearray, memoryview, numpy
        array..., at most :data:`MAX_MEDIUM` bytes) is read in place and delivered in a
        library buffer to the receiver's handler."""
        h = _handler_index(handler, "AM_RequestI")
        n, argv = _argv(args, "AM_RequestI")
        ep = self._h()
        with SendBuffer(data) as b:
            rc = self._request(
                ep, _dest_index(dest, "AM_RequestI"), h, 1, b.ptr, b.nbytes, 0, 0, n, argv
            )
        _after(rc, "AM_RequestI", _size_hint(rc, b.nbytes, 1))

    def request_long(
        self,
        dest: int,
        handler: int,
        data: BufferLike,
        dest_offset: int,
        *args: int,
        block: bool = True,
    ) -> None:
        """Long request (``AM_RequestXferM``): ``data`` (at most :data:`MAX_LONG` bytes) is
        written at ``dest_offset`` bytes into the receiver's segment, then its handler
        runs with a view of that range.  With ``block=False`` (``AM_RequestXferAsyncM``)
        it raises :class:`InUseError` instead of waiting for a send credit."""
        h = _handler_index(handler, "AM_RequestXfer")
        n, argv = _argv(args, "AM_RequestXfer")
        ep = self._h()
        with SendBuffer(data) as b:
            rc = self._request(
                ep,
                _dest_index(dest, "AM_RequestXfer"),
                h,
                2,
                b.ptr,
                b.nbytes,
                _offset(dest_offset, "AM_RequestXfer"),
                0 if block else 1,
                n,
                argv,
            )
        _after(rc, "AM_RequestXfer", _size_hint(rc, b.nbytes, 2))

    def poll(self) -> None:
        """``AM_Poll`` on this endpoint's bundle."""
        # the bundle's _Poller: this thread's state and drain descriptor if this
        # thread polled the bundle last (else the library says RAMP_DRAIN_NOT_MINE,
        # nothing done, and _poll_bundle takes over); a poll that finds nothing (most
        # of a loop of polls) returns at once (Bundle.poll: keep in step)
        b = self._bundle
        d = b._poller
        s = d.s
        if not s.depth:  # (another thread's depth: its descriptor is refused anyway)
            n = _don(d.p)  # the count, or minus the error code
            if n != 1:  # (not n == 1: a jump this long would not be specialized)
                if n:  # (0: nothing came, most polls of a loop)
                    if n > 0:
                        _play(s, n)
                    else:
                        if n == _DRAIN_NOT_MINE:
                            _poll_bundle(b)
                        else:
                            _after(_drain_failed(s, n, d.i), "ramp_Drain")
                        return
            else:
                # _play's quick message, here (one Python call less per message; keep
                # in step with _play and Endpoint.wait's copy)
                tp, eid, a0, a1, kind = _head(s.msgs_view, 0)
                try:
                    ep = _endpoints[eid]
                    q = ep._quick[kind]
                except KeyError:
                    q = _not_quick(eid, kind)
                if q is None:
                    _play(s, 1)
                else:
                    fn, k = q
                    s.depth = 1  # (0 before: tested above)
                    try:
                        tok = s.spare
                        if tok is None:
                            tok = s.spare = Token(tp, ep, False, 0)
                        else:
                            tok._ptr = tp
                            tok._ep = ep
                            tok._idx = 0
                        try:
                            if k == 1:
                                fn(tok, a0)
                            elif k:
                                fn(tok, a0, a1)
                            else:
                                fn(tok)
                        except BaseException as e:
                            _defer(s, e)
                        if _refs(tok) != 3:  # kept by someone: expired, not reused
                            _expire(s, tok, tp, kind)
                        elif kind >= _KIND_REQUEST:
                            if tok._replied:
                                tok._replied = False
                            else:
                                _end_request(tp)
                    except BaseException:
                        _expire_spare(s)
                        raise
                    finally:
                        s.depth = 0
                        s.count += 1
            if _pending_any:  # a handler raised (this thread's, or another's)
                _after(0, "ramp_Drain")
            return
        _poll_bundle(b)

    def wait(
        self,
        until: Optional[Callable[[], bool]] = None,
        timeout: Optional[float] = None,
        spin: float = 0.0005,
    ) -> bool:
        """:meth:`Bundle.wait` on this endpoint's bundle."""
        # Bundle.wait's fast path and _wait_loop's, here, with _play's quick message
        # inline: a wait without timeout on this thread's cached descriptor of the
        # bundle (see _Poller) runs in this loop from its first drain to its last (a
        # call less per message, and per wait; keep in step with Bundle.wait and
        # _wait_loop); anything else takes _wait.
        b = self._bundle
        d = b._poller
        s = d.s
        if s.depth or until is None or timeout is not None or not spin >= _SPIN_CHUNK_S:
            return _wait(b, until, timeout, spin)
        if until():
            return True
        wp = d.wp
        seen = s.count
        spin_end: Optional[float] = None
        while True:
            n = _don(wp)  # the count, or minus the error code
            if n != 1:  # (not n == 1: a jump this long would not be specialized)
                if n > 0:
                    _play(s, n)
                elif n:
                    if n == _DRAIN_NOT_MINE:  # another thread's descriptor (first drain)
                        return _wait_loop(b, until, None, spin, _tls.s, None)
                    _after(_drain_failed(s, n, d.wi), "ramp_DrainWait")
            else:
                # _play's quick message, here (keep in step with _play and
                # Endpoint.poll's copy)
                tp, eid, a0, a1, kind = _head(s.msgs_view, 0)
                try:
                    ep = _endpoints[eid]
                    q = ep._quick[kind]
                except KeyError:
                    q = _not_quick(eid, kind)
                if q is None:
                    _play(s, 1)
                else:
                    fn, k = q
                    s.depth = 1  # (0 before: tested above)
                    try:
                        tok = s.spare
                        if tok is None:
                            tok = s.spare = Token(tp, ep, False, 0)
                        else:
                            tok._ptr = tp
                            tok._ep = ep
                            tok._idx = 0
                        try:
                            if k == 1:
                                fn(tok, a0)
                            elif k:
                                fn(tok, a0, a1)
                            else:
                                fn(tok)
                        except BaseException as e:
                            _defer(s, e)
                        if _refs(tok) != 3:  # kept by someone: expired, not reused
                            _expire(s, tok, tp, kind)
                        elif kind >= _KIND_REQUEST:
                            if tok._replied:
                                tok._replied = False
                            else:
                                _end_request(tp)
                    except BaseException:
                        _expire_spare(s)
                        raise
                    finally:
                        s.depth = 0
                        s.count += 1
            if _pending_any:  # a handler raised (this thread's, or another's)
                _after(0, "ramp_DrainWait")
            if until():
                return True
            # _wait_loop's bookkeeping without a timeout: progress keeps the spin
            # going (its window restarts at the next look that finds none); after
            # ``spin`` seconds without, AM_WaitSema
            if b._hp is None:
                raise RampError("the bundle is closed")
            c = s.count
            if c != seen:
                seen = c
                spin_end = None
                continue
            now = time.monotonic()
            if spin_end is None:
                spin_end = now + spin
            elif now >= spin_end:
                b.wait_sema()
                if until():
                    return True

    # -- statistics ----------------------------------------------------------------

    def statistics(self) -> Dict[str, Any]:
        """``ramp_GetEndpointStatistics`` as a dict (see :func:`statistics_to_dict`)."""
        s = ramp_stats_t()
        _check(_L().ramp_GetEndpointStatistics(self._h(), byref(s)), "ramp_GetEndpointStatistics")
        return statistics_to_dict(s)

    def peer_paths(self, dest: EndpointName) -> List[Dict[str, Any]]:
        """``ramp_GetPeerPaths``: the paths to the peer named ``dest``, one dict each
        (see :func:`ramp.paths.path_to_dict`: rail, local, remote, state, srtt_ns, cwnd,
        rate, bytes_sent, bytes_acked, errors, failures, current).  BadArgError for a
        peer this endpoint has no association with."""
        from .paths import peer_paths

        return peer_paths(self._h(), dest)

    def reset_statistics(self) -> None:
        """``ramp_ResetEndpointStatistics``: zeroes the counters."""
        _check(_L().ramp_ResetEndpointStatistics(self._h()), "ramp_ResetEndpointStatistics")

    # -- lifetime ------------------------------------------------------------------

    def move(self, to_bundle: Bundle) -> None:
        """``AM_MoveEndpoint``: moves the endpoint from its bundle to ``to_bundle``."""
        _check(
            _L().AM_MoveEndpoint(self._h(), self._bundle._h(), to_bundle._h()), "AM_MoveEndpoint"
        )
        self._bundle._endpoints.pop(self._handle or 0, None)
        self._bundle = to_bundle
        to_bundle._endpoints[self._handle or 0] = self

    def close(self) -> None:
        """``AM_FreeEndpoint``; then drops the handlers and the segment.  Idempotent.

        The endpoint made by SPMD start-up belongs to the job and is not freed.
        """
        if self._handle is None or not self._owned:
            return
        _release_drained()
        rc = _L().AM_FreeEndpoint(self._handle)
        if rc and rc != ErrorCode.AM_ERR_BAD_ARG:  # BAD_ARG: already freed with its bundle
            raise error_for(rc, "AM_FreeEndpoint")
        self._forget()

    free = close

    def _forget(self) -> None:
        h = self._handle
        if h is None:
            return
        self._bundle._endpoints.pop(h, None)
        _endpoints.pop(h, None)
        self._handle = None
        self._hp = None
        self._callbacks.clear()
        self._functions.clear()
        self._play = [None] * 256
        self._quick = {}
        self._retired.clear()
        self._segment = self._seg_flat = self._seg_pin = None
        self._seg_addr = 0
        self._seg_allocated = False

    def __enter__(self) -> "Endpoint":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._handle is None:
            return "<ramp.Endpoint (closed)>"
        try:
            name = str(self.name)
        except RampError:
            name = "?"
        return "<ramp.Endpoint %#x at %s>" % (self._handle, name)


# the class a region's endpoint must be (ramp._regions is below this module)
_regions._endpoint_class_is(Endpoint)


# --------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------


def statistics_to_dict(stats: ramp_stats_t) -> Dict[str, Any]:
    """A ``ramp_stats_t`` as a dict: field name -> int, or a ``(short, medium, long)``
    tuple for the per-category arrays.  Latencies and round-trip times are in ns."""
    if not isinstance(stats, ramp_stats_t):
        raise TypeError("statistics_to_dict: expects a ramp_stats_t, got %s" % type(stats).__name__)
    d: Dict[str, Any] = {}
    for name, _ in ramp_stats_t._fields_:
        v = getattr(stats, name)
        d[name] = tuple(v) if isinstance(v, ctypes.Array) else int(v)
    return d


def _dict_to_stats(d: Dict[str, Any]) -> ramp_stats_t:
    if not isinstance(d, dict):
        raise TypeError("expected a statistics dict (Endpoint.statistics()), got %s" % type(d).__name__)
    s = ramp_stats_t()
    for name, _ in ramp_stats_t._fields_:
        if name not in d:
            raise KeyError("statistics dict lacks %r" % name)
        v = d[name]
        if isinstance(getattr(s, name), ctypes.Array):
            setattr(s, name, (c_uint64 * 3)(*v))
        else:
            setattr(s, name, int(v))
    return s


def initial_statistics() -> Dict[str, Any]:
    """``ramp_initial_stats``: the identity of :func:`aggregate_statistics`."""
    return statistics_to_dict(ramp_stats_t.in_dll(_L(), "ramp_initial_stats"))


def aggregate_statistics(*stats: Dict[str, Any]) -> Dict[str, Any]:
    """``ramp_AggregateStatistics`` over several statistics dicts (sums; min/max for the
    Min/Max fields)."""
    total = ramp_stats_t.from_buffer_copy(ramp_stats_t.in_dll(_L(), "ramp_initial_stats"))
    for d in stats:
        s = _dict_to_stats(d)
        _check(_L().ramp_AggregateStatistics(byref(total), byref(s)), "ramp_AggregateStatistics")
    return statistics_to_dict(total)


def format_statistics(stats: Dict[str, Any], global_analysis: bool = False) -> str:
    """``ramp_DumpStatistics``: the library's text report of a statistics dict."""
    s = _dict_to_stats(stats)
    r = _L().ramp_DumpStatistics(None, byref(s), 1 if global_analysis else 0)
    if r is None:
        raise error_for(ErrorCode.AM_ERR_BAD_ARG, "ramp_DumpStatistics")
    return str(r.decode("utf-8", "replace"))
