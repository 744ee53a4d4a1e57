"""One-sided remote memory (ramp.h, "Remote memory"): regions, put, put with a
notification word, get, test/wait/fence, waiting for a flag, the progress thread.

Buffers are used in place, never copied by this module: a region is any writable,
C-contiguous buffer (``bytearray``, numpy array, ``mmap``...), pinned while it is
registered; a put reads its source during the call (the library copies it before
returning); a get writes into its destination, which stays pinned until the
operation completes (its :class:`Op` is reported done, or :func:`fence` returns).

>>> r = rma.register_region(y, numpy.zeros(1 << 20, numpy.uint8))   # at the target
>>> op = rma.put(x, 0, r.id, 0, numpy.arange(100, dtype=numpy.uint8))
>>> op.wait()          # 0, or an AM-2 status code such as ramp.Status.EBADSEGOFF
0

Memory ramp allocates (:func:`alloc_region`, ``Endpoint.alloc_region``) is mapped by
same-host peers, whose puts and gets into it are then one memcpy each.

Statuses: 0, or EBADSEGOFF (no such region, no access right, out of bounds: nothing
was written), EBADTAG, EBADENDPOINT, EUNREACHABLE.  Ordering: a put or get is
performed at the target before any AM request the same endpoint sends it later runs
its handler; nothing else is promised between puts.
"""

from __future__ import annotations

from ctypes import byref, c_int, c_uint64
from typing import Any, Dict, List, Optional, Tuple

from ._buffers import BufferLike, SendBuffer, flat_writable
from ._regions import (  # noqa: F401 (ramp.rma's names, as before)
    READ,
    SEGMENT,
    WRITE,
    Region,
    _L,
    alloc_region,
    alloc_segment,
)
from .core import Bundle, Endpoint, _after, _check, _handle_of
from .errors import BadArgError
from .constants import ErrorCode

__all__ = [
    "SEGMENT",
    "READ",
    "WRITE",
    "Region",
    "Op",
    "register_region",
    "alloc_region",
    "put",
    "get",
    "fence",
    "wait_flag",
    "set_progress_thread",
]

#: Destinations of gets without a handle, by endpoint handle, until a fence.
_unfenced: Dict[int, List[Any]] = {}


def _u64(v: int, what: str, function: str) -> int:
    v = int(v)
    if not 0 <= v < 2**64:
        raise BadArgError(ErrorCode.AM_ERR_BAD_ARG, function, "%s %d is outside 0..2**64-1" % (what, v))
    return v


def _u32(v: int, what: str, function: str) -> int:
    v = int(v)
    if not 0 <= v < 2**32:
        raise BadArgError(ErrorCode.AM_ERR_BAD_ARG, function, "%s %d is outside 0..2**32-1" % (what, v))
    return v


def register_region(endpoint: Endpoint, buffer: BufferLike, access: int = READ | WRITE) -> Region:
    """``ramp_RegisterRegion``: exposes ``buffer`` (used in place) to peers' puts and gets."""
    return Region(endpoint, buffer, access)


class Op:
    """One put or get with a handle: :meth:`test` or :meth:`wait` reports it once."""

    __slots__ = ("endpoint", "handle", "status", "_pin")

    def __init__(self, endpoint: Endpoint, handle: int, pin: Any = None) -> None:
        self.endpoint = endpoint
        self.handle = handle
        #: The status once reported (0 or an AM-2 status code), else None.
        self.status: Optional[int] = None
        self._pin = pin

    def test(self) -> Optional[int]:
        """``ramp_Test`` (makes progress): the status once complete, else None."""
        if self.status is not None:
            return self.status
        done, status = c_int(), c_int()
        rc = _L().ramp_Test(self.endpoint._h(), self.handle, byref(done), byref(status))
        _after(rc, "ramp_Test")
        if done.value:
            self.status, self._pin = status.value, None
        return self.status

    def wait(self) -> int:
        """``ramp_Wait``: waits (polling; handlers may run) and returns the status."""
        if self.status is not None:
            return self.status
        status = c_int()
        rc = _L().ramp_Wait(self.endpoint._h(), self.handle, byref(status))
        _after(rc, "ramp_Wait")
        self.status, self._pin = status.value, None
        return self.status

    @property
    def done(self) -> bool:
        return self.test() is not None

    def __repr__(self) -> str:
        return "<ramp.rma.Op %d status %r>" % (self.handle, self.status)


def put(
    endpoint: Endpoint,
    dest: int,
    region: int,
    offset: int,
    data: BufferLike,
    notify: Optional[Tuple[int, int]] = None,
    handle: bool = True,
) -> Optional[Op]:
    """``ramp_Put`` (``ramp_PutNotify`` with ``notify=(flag_offset, value)``): puts
    ``data`` at ``offset`` of region ``region`` of translation index ``dest``.
    Returns once ``data`` may be reused: an :class:`Op`, or None with
    ``handle=False`` (then only :func:`fence` waits for it)."""
    fn = "ramp_PutNotify" if notify is not None else "ramp_Put"
    ep = _handle_of(endpoint, Endpoint, fn)
    off = _u64(offset, "offset", fn)
    h = c_uint64()
    out = byref(h) if handle else None
    with SendBuffer(data) as src:
        if notify is None:
            rc = _L().ramp_Put(ep, _u32(dest, "dest", fn), _u32(region, "region", fn),
                               off, src.ptr, src.nbytes, out)
        else:
            foff, value = notify
            rc = _L().ramp_PutNotify(ep, _u32(dest, "dest", fn), _u32(region, "region", fn),
                                     off, src.ptr, src.nbytes, _u64(foff, "flag offset", fn),
                                     _u32(value, "flag value", fn), out)
    _after(rc, fn)
    return Op(endpoint, h.value) if handle else None


def get(
    endpoint: Endpoint, dest: int, region: int, offset: int, out: BufferLike, handle: bool = True
) -> Optional[Op]:
    """``ramp_Get``: fills ``out`` (a writable, C-contiguous buffer, pinned until the
    operation completes) from ``offset`` of region ``region`` of ``dest``."""
    ep = _handle_of(endpoint, Endpoint, "ramp_Get")
    flat, addr, pin = flat_writable(out)
    h = c_uint64()
    rc = _L().ramp_Get(ep, _u32(dest, "dest", "ramp_Get"), _u32(region, "region", "ramp_Get"),
                       _u64(offset, "offset", "ramp_Get"), addr or None, flat.nbytes,
                       byref(h) if handle else None)
    _after(rc, "ramp_Get")
    keep = (out, flat, pin)
    if handle:
        return Op(endpoint, h.value, keep)
    _unfenced.setdefault(ep, []).append(keep)
    return None


def fence(endpoint: Endpoint) -> None:
    """``ramp_Fence``: waits for every put and get issued so far; raises
    :class:`ramp.ResourceError` if one failed that was not reported yet."""
    h = _handle_of(endpoint, Endpoint, "ramp_Fence")
    rc = _L().ramp_Fence(h)
    _unfenced.pop(h, None)
    _after(rc, "ramp_Fence")


def wait_flag(endpoint: Endpoint, buffer: BufferLike, offset: int, value: int) -> None:
    """``ramp_WaitFlag``: polls ``endpoint`` until the 32-bit word at byte ``offset`` of
    ``buffer`` (e.g. a region's array) equals ``value``."""
    h = _handle_of(endpoint, Endpoint, "ramp_WaitFlag")
    flat, addr, pin = flat_writable(buffer)
    off = int(offset)
    if not 0 <= off <= flat.nbytes - 4:
        raise BadArgError(ErrorCode.AM_ERR_BAD_ARG, "ramp_WaitFlag",
                          "flag offset %d outside the buffer of %d bytes" % (off, flat.nbytes))
    rc = _L().ramp_WaitFlag(h, addr + off, _u32(value, "value", "ramp_WaitFlag"))
    del pin
    _after(rc, "ramp_WaitFlag")


def set_progress_thread(bundle: Bundle, on: bool = True) -> None:
    """``ramp_SetProgressThread``: the bundle's progress thread performs peers' puts
    and gets while Python computes (it never runs a handler)."""
    h = _handle_of(bundle, Bundle, "ramp_SetProgressThread")
    _check(_L().ramp_SetProgressThread(h, 1 if on else 0), "ramp_SetProgressThread")
