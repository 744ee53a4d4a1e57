"""Transactions (include/ramp.h, "transactions"): requests whose progress is kept.

A transaction is a request, the target's ack when its handler starts, and the reply
when it is done; its handler runs at most once, also when the request is
retransmitted, duplicated or replayed (a duplicate gets the reply the target kept)::

    t = ramp.txn.request(ep, peer, handler, 1, 2)        # a short request, kept
    st = t.wait(timeout_ms=5000)                         # polls; handlers may run
    if st.progress == ramp.txn.PROCESSED: ...
    elif st.abandon == ramp.txn.REFUSED: ...              # it never ran
    t.release()

:class:`State` is ``ramp_txn_state_t``: ``ack`` (NONE, ACKED, NACKED), ``progress``
(NOT_SENT, REQUEST_SENT, PROCESSING, PROCESSED), ``abandon`` (ABANDON_NONE,
NOT_ACKED, REFUSED, HANDLER_TIMEOUT, NO_REPLY, TARGET_CRASHED) and ``status`` (the
AM-2 status code when abandoned).  A failed transaction does not call the error
handler: its state says where it failed.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, byref, c_int, c_size_t, c_uint8, c_uint32, c_uint64, c_void_p
from typing import List, NamedTuple, Optional

from . import _lib
from ._buffers import BufferLike, SendBuffer
from .core import Endpoint, _after, _argv, _check, _dest_index, _handle_of, _handler_index

__all__ = [
    "State",
    "Txn",
    "request",
    "request_medium",
    "list_txns",
    "set_handler_timeout",
    "log_open",
    "NONE",
    "ACKED",
    "NACKED",
    "NOT_SENT",
    "REQUEST_SENT",
    "PROCESSING",
    "PROCESSED",
    "ABANDON_NONE",
    "NOT_ACKED",
    "REFUSED",
    "HANDLER_TIMEOUT",
    "NO_REPLY",
    "TARGET_CRASHED",
]

NONE, ACKED, NACKED = 0, 1, 2
NOT_SENT, REQUEST_SENT, PROCESSING, PROCESSED = 0, 1, 2, 3
ABANDON_NONE, NOT_ACKED, REFUSED, HANDLER_TIMEOUT, NO_REPLY, TARGET_CRASHED = range(6)

AM_ERR_RESOURCE = 3


class _CState(ctypes.Structure):
    _fields_ = [("ack", c_int), ("progress", c_int), ("abandon", c_int), ("status", c_int)]


class State(NamedTuple):
    ack: int
    progress: int
    abandon: int
    status: int

    @property
    def done(self) -> bool:
        """PROCESSED or abandoned: nothing more will happen to it."""
        return self.progress == PROCESSED or self.abandon != ABANDON_NONE


_I = c_int
_P = c_void_p
_PROTOTYPES = {
    "ramp_RequestTxn": (
        _I,
        [_P, c_uint32, c_uint8, _I, _P, c_size_t, c_size_t, _I]
        + [POINTER(ctypes.c_int32), POINTER(c_uint64)],
    ),
    "ramp_TxnState": (_I, [_P, c_uint64, POINTER(_CState)]),
    "ramp_TxnWait": (_I, [_P, c_uint64, _I, POINTER(_CState)]),
    "ramp_TxnList": (_I, [_P, _I, POINTER(c_uint64), c_size_t, POINTER(c_size_t)]),
    "ramp_TxnRelease": (_I, [_P, c_uint64]),
    "ramp_SetHandlerTimeout": (_I, [_P, c_uint64]),
    "ramp_LogOpen": (_I, [_P, ctypes.c_char_p]),
}


def _L() -> ctypes.CDLL:
    return _lib.declared(_PROTOTYPES)


def _state(c: _CState) -> State:
    return State(c.ack, c.progress, c.abandon, c.status)


class Txn:
    """A kept transaction of ``endpoint``: ``id`` is ``ramp_txn_t``."""

    __slots__ = ("endpoint", "id")

    def __init__(self, endpoint: Endpoint, txn_id: int) -> None:
        _handle_of(endpoint, Endpoint, "ramp.txn.Txn")
        if not isinstance(txn_id, int) or not 0 <= txn_id < 2**64:
            raise TypeError("ramp.txn.Txn: a transaction id is an int in 0..2**64-1, not %r" % (txn_id,))
        self.endpoint = endpoint
        self.id = txn_id

    def state(self) -> State:
        """``ramp_TxnState``."""
        c = _CState()
        _check(_L().ramp_TxnState(self.endpoint._h(), self.id, byref(c)), "ramp_TxnState")
        return _state(c)

    def wait(self, timeout_ms: int = -1) -> Optional[State]:
        """``ramp_TxnWait``: the state once PROCESSED or abandoned; None when
        ``timeout_ms`` passed first (negative: no limit).  Handlers may run."""
        c = _CState()
        rc = _L().ramp_TxnWait(self.endpoint._h(), self.id, int(timeout_ms), byref(c))
        if rc == AM_ERR_RESOURCE:
            _after(0, "ramp_TxnWait")
            return None
        _after(rc, "ramp_TxnWait")
        return _state(c)

    def release(self) -> None:
        """``ramp_TxnRelease``: forgets its state."""
        _check(_L().ramp_TxnRelease(self.endpoint._h(), self.id), "ramp_TxnRelease")

    def __repr__(self) -> str:
        return "<ramp.txn.Txn %d>" % self.id


def _request(
    ep: Endpoint, dest: int, handler: int, cat: int, data: Optional[BufferLike], args: tuple
) -> Txn:
    e = _handle_of(ep, Endpoint, "ramp_RequestTxn")
    h = _handler_index(handler, "ramp_RequestTxn")
    n, argv = _argv(args, "ramp_RequestTxn")
    d = _dest_index(dest, "ramp_RequestTxn")
    out = c_uint64()
    if data is None:
        rc = _L().ramp_RequestTxn(e, d, h, cat, None, 0, 0, n, argv, byref(out))
    else:
        with SendBuffer(data) as b:
            rc = _L().ramp_RequestTxn(
                e, d, h, cat, b.ptr, b.nbytes, 0, n, argv, byref(out)
            )
    _after(rc, "ramp_RequestTxn")
    return Txn(ep, out.value)


def request(ep: Endpoint, dest: int, handler: int, *args: int) -> Txn:
    """A short request (as ``Endpoint.request``) whose state is kept."""
    return _request(ep, dest, handler, 0, None, args)


def request_medium(ep: Endpoint, dest: int, handler: int, data: BufferLike, *args: int) -> Txn:
    """A medium request (as ``Endpoint.request_medium``) whose state is kept."""
    return _request(ep, dest, handler, 1, data, args)


def list_txns(ep: Endpoint, progress: int) -> List[int]:
    """``ramp_TxnList``: ids of kept transactions at ``progress``, oldest first."""
    e = _handle_of(ep, Endpoint, "ramp_TxnList")
    count = c_size_t()
    _check(_L().ramp_TxnList(e, int(progress), None, 0, byref(count)), "ramp_TxnList")
    while True:
        n = count.value
        arr = (c_uint64 * max(n, 1))()
        _check(_L().ramp_TxnList(e, int(progress), arr, n, byref(count)), "ramp_TxnList")
        if count.value <= n:
            return list(arr[: count.value])


def set_handler_timeout(ep: Endpoint, usec: int) -> None:
    """``ramp_SetHandlerTimeout``: the handler-time bound (0: none)."""
    e = _handle_of(ep, Endpoint, "ramp_SetHandlerTimeout")
    _check(_L().ramp_SetHandlerTimeout(e, int(usec)), "ramp_SetHandlerTimeout")


def log_open(ep: Endpoint, path: str) -> None:
    """``ramp_LogOpen``: keeps ep's transactions in the log at ``path`` (before ep maps
    any peer).  An existing log makes ep the endpoint it names (same address), so a
    process killed with SIGKILL and started again with the same path comes back as
    the same endpoint: a finished handler never runs again, one that had started
    answers TARGET_CRASHED."""
    e = _handle_of(ep, Endpoint, "ramp_LogOpen")
    _check(_L().ramp_LogOpen(e, os.fsencode(path)), "ramp_LogOpen")
    ep._name = None  # the logged name, read again
