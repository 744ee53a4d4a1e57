"""The memory regions of an endpoint (ramp.h, "Remote memory"): a registered buffer or
memory ramp allocates (:class:`Region`, :func:`alloc_region`), the AM-2 segment in memory
ramp allocates (:func:`alloc_segment`), and the declarations of the library's
remote-memory functions (``_L``).

Below :mod:`ramp.core` (whose ``Endpoint.alloc_region`` and ``Endpoint.alloc_segment``
make them) and :mod:`ramp.rma` (which re-exports them: ``ramp.rma.Region``,
``ramp.rma.alloc_region``, ``ramp.rma.READ``...); it imports neither: core hands it the
endpoint class (:func:`_endpoint_class_is`) that a region's endpoint must be.
"""

from __future__ import annotations

import ctypes
import sys
from ctypes import POINTER, byref, c_int, c_size_t, c_uint, c_uint32, c_uint64, c_void_p
from typing import Any, Dict, Optional, Tuple

from . import _lib
from ._base import _check, _handle_of
from ._buffers import BufferLike, flat_writable
from .constants import ErrorCode
from .errors import BadArgError


#: Region 0: the endpoint's AM-2 segment (``Endpoint.set_segment``).
SEGMENT = 0
#: Access rights of a region.
READ = 1
WRITE = 2

_I = c_int
_P = c_void_p
_PROTOTYPES = {
    "ramp_RegisterRegion": (_I, [_P, _P, c_size_t, c_uint, POINTER(c_uint32)]),
    "ramp_DeregisterRegion": (_I, [_P, c_uint32]),
    "ramp_AllocRegion": (_I, [_P, c_size_t, c_uint, POINTER(c_void_p), POINTER(c_uint32)]),
    "ramp_AllocSegment": (_I, [_P, c_size_t, POINTER(c_void_p)]),
    "ramp_Put": (_I, [_P, c_uint32, c_uint32, c_uint64, _P, c_size_t, POINTER(c_uint64)]),
    "ramp_PutNotify": (
        _I,
        [_P, c_uint32, c_uint32, c_uint64, _P, c_size_t, c_uint64, c_uint32, POINTER(c_uint64)],
    ),
    "ramp_Get": (_I, [_P, c_uint32, c_uint32, c_uint64, _P, c_size_t, POINTER(c_uint64)]),
    "ramp_Test": (_I, [_P, c_uint64, POINTER(c_int), POINTER(c_int)]),
    "ramp_Wait": (_I, [_P, c_uint64, POINTER(c_int)]),
    "ramp_Fence": (_I, [_P]),
    "ramp_WaitFlag": (_I, [_P, _P, c_uint32]),
    "ramp_SetProgressThread": (_I, [_P, c_int]),
}
#: Registered regions by (endpoint handle, id): their buffers stay pinned (and
#: alive) until deregistered, whatever the caller keeps.
_regions: Dict[Tuple[int, int], "Region"] = {}


def _L() -> ctypes.CDLL:
    return _lib.declared(_PROTOTYPES)


#: The class a region's endpoint must be: ramp.core.Endpoint, which core hands over
#: as it defines it (core stands on this module, which so cannot import it).
_Endpoint: type = type(None)


def _endpoint_class_is(cls: type) -> None:
    """Called by ramp.core with its ``Endpoint`` class, once, as it is imported."""
    global _Endpoint
    _Endpoint = cls



class Region:
    """A registered region of an endpoint: ``id`` is what peers name it by."""

    __slots__ = ("id", "endpoint", "buffer", "_flat", "_addr", "_pin", "_key", "_nbytes", "_allocated")

    def __init__(self, endpoint: Any, buffer: Optional[BufferLike], access: int, nbytes: int = 0) -> None:
        _handle_of(endpoint, _Endpoint, "ramp_AllocRegion" if buffer is None else "ramp_RegisterRegion")
        self._allocated = buffer is None
        if buffer is None:
            self._alloc(endpoint, nbytes, access)
            return
        flat, addr, pin = flat_writable(buffer)
        rid = c_uint32()
        h = endpoint._h()
        _check(
            _L().ramp_RegisterRegion(h, addr or None, flat.nbytes, int(access), byref(rid)),
            "ramp_RegisterRegion",
        )
        self.id: int = rid.value
        self.endpoint = endpoint
        self.buffer = buffer
        self._flat, self._addr, self._pin = flat, addr, pin
        self._nbytes = flat.nbytes
        self._key: Optional[Tuple[int, int]] = (h, self.id)
        _regions[self._key] = self

    def _alloc(self, endpoint: Any, nbytes: int, access: int) -> None:
        n = int(nbytes)
        if not 0 < n < 2**63:
            raise BadArgError(ErrorCode.AM_ERR_BAD_ARG, "ramp_AllocRegion", "length %d is not positive" % n)
        rid, base = c_uint32(), c_void_p()
        h = endpoint._h()
        _check(_L().ramp_AllocRegion(h, n, int(access), byref(base), byref(rid)), "ramp_AllocRegion")
        size = (n + 4095) // 4096 * 4096
        self.id = rid.value
        self.endpoint = endpoint
        self.buffer = (ctypes.c_uint8 * size).from_address(base.value)
        self._flat, self._addr, self._pin = None, base.value, None
        self._nbytes = size
        self._key = (h, self.id)
        _regions[self._key] = self

    @property
    def address(self) -> int:
        return self._addr

    @property
    def nbytes(self) -> int:
        return self._nbytes

    def deregister(self) -> None:
        """``ramp_DeregisterRegion``: from now on peers' puts and gets are refused.
        For a region from :func:`alloc_region` the memory is freed: refused
        (BadArgError, still registered) while anything else refers to ``buffer``
        (a numpy array or memoryview made from it, a variable)."""
        if self._key is None:
            return
        if self._allocated and sys.getrefcount(self.buffer) > 2:
            raise BadArgError(
                ErrorCode.AM_ERR_BAD_ARG,
                "ramp_DeregisterRegion",
                "the allocated region's buffer is still referred to (numpy arrays, memoryviews): drop them first",
            )
        _check(_L().ramp_DeregisterRegion(self.endpoint._h(), self.id), "ramp_DeregisterRegion")
        _regions.pop(self._key, None)
        self._key = None
        self._pin = None
        if self._allocated:
            self.buffer = None

    def __enter__(self) -> "Region":
        return self

    def __exit__(self, *exc: object) -> None:
        self.deregister()

    def __repr__(self) -> str:
        state = "registered" if self._key else "deregistered"
        return "<ramp.rma.Region %d, %d bytes, %s>" % (self.id, self.nbytes, state)


def alloc_region(endpoint: Any, nbytes: int, access: int = READ | WRITE) -> Region:
    """``ramp_AllocRegion``: ``nbytes`` (rounded up to pages) of zeroed memory ramp
    allocates and registers; same-host peers map it and put or get with one memcpy.
    ``region.buffer`` is a ctypes array over it (``numpy.frombuffer(region.buffer,
    numpy.uint8)`` views it in place); :meth:`Region.deregister` frees it."""
    return Region(endpoint, None, access, nbytes)


def alloc_segment(endpoint: Any, nbytes: int) -> Any:
    """``ramp_AllocSegment``: ``nbytes`` (rounded up to pages) of zeroed memory ramp
    allocates and makes ``endpoint``'s AM-2 segment (as :meth:`Endpoint.set_segment`);
    same-host peers map it, and their long requests into it are one memcpy.  Returns
    a ctypes array over it (also ``endpoint.segment``; ``numpy.frombuffer`` views it
    in place).  Replacing the segment frees the memory: refused (BadArgError) while
    anything else refers to that array; memoryviews a long handler was given must not
    be kept past it."""
    h = _handle_of(endpoint, _Endpoint, "ramp_AllocSegment")
    n = int(nbytes)
    if not 0 < n < 2**63:
        raise BadArgError(ErrorCode.AM_ERR_BAD_ARG, "ramp_AllocSegment", "length %d is not positive" % n)
    endpoint._segment_replaceable("ramp_AllocSegment")
    base = c_void_p()
    _check(_L().ramp_AllocSegment(h, n, byref(base)), "ramp_AllocSegment")
    size = (n + 4095) // 4096 * 4096
    arr = (ctypes.c_uint8 * size).from_address(base.value)
    endpoint._segment, endpoint._seg_flat = arr, memoryview(arr).cast("B")
    endpoint._seg_addr, endpoint._seg_pin, endpoint._seg_allocated = base.value, None, True
    return arr
