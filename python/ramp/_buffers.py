"""Zero-copy access to Python buffers (bytes, bytearray, memoryview, numpy, array...).

Payload sent by requests and replies is read straight from the caller's buffer
(the library copies it before the call returns), through the buffer protocol:
``bytes`` is passed as is, writable buffers through ``ctypes.from_buffer``, and any
other C-contiguous buffer (read-only memoryviews, read-only numpy arrays) through
``PyObject_GetBuffer`` called via ``ctypes.pythonapi``.  Only buffers that are not
C-contiguous (e.g. a strided numpy slice) are copied, into C order.
"""

from __future__ import annotations

import ctypes
from typing import Any, Optional, Tuple

from . import _lib
from ._lib import PyBUF_C_CONTIGUOUS, Py_buffer

__all__ = ["BufferLike", "SendBuffer", "flat_writable"]

#: Anything exporting the buffer protocol: bytes, bytearray, memoryview,
#: array.array, mmap, numpy arrays, ctypes arrays...
BufferLike = Any


class SendBuffer:
    """The address and length of a payload for the duration of one call.

    Use as a context manager; ``ptr`` is what to pass as ``const void *``.
    """

    __slots__ = ("ptr", "nbytes", "_view", "_keep")

    def __init__(self, data: Optional[BufferLike]) -> None:
        self._view: Optional[Py_buffer] = None
        self._keep: Any = None
        if data is None:
            self.ptr: Any = None
            self.nbytes = 0
            return
        t = type(data)
        if t is bytes:
            self.ptr = data if data else None  # ctypes passes the bytes' own storage
            self.nbytes = len(data)
            return
        if t is bytearray:
            n = len(data)
            self.nbytes = n
            self.ptr = (ctypes.c_char * n).from_buffer(data) if n else None
            return
        if t is str:
            raise TypeError("payload must be bytes-like, not str (encode it first)")
        view = Py_buffer()
        try:
            _lib.PyObject_GetBuffer(data, ctypes.byref(view), PyBUF_C_CONTIGUOUS)
        except (BufferError, ValueError):
            # not C-contiguous: copy it, in C order (the only copy this module makes)
            copy = memoryview(data).tobytes()
            self._keep = copy
            self.ptr = copy if copy else None
            self.nbytes = len(copy)
            return
        except TypeError:
            raise TypeError(
                "payload must support the buffer protocol (bytes, bytearray, memoryview, "
                "numpy array...), not %s" % t.__name__
            ) from None
        self._view = view
        self.nbytes = view.len
        self.ptr = view.buf if view.len else None

    def release(self) -> None:
        """Releases the buffer export (idempotent)."""
        if self._view is not None:
            _lib.PyBuffer_Release(ctypes.byref(self._view))
            self._view = None

    def __enter__(self) -> "SendBuffer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def flat_writable(obj: BufferLike) -> Tuple[memoryview, int, Any]:
    """For a segment: a flat byte view, its address, and the object pinning it.

    ``obj`` must be a writable, C-contiguous buffer (bytearray, writable numpy array,
    memoryview of one, array.array, mmap...).  While the returned objects live,
    the buffer cannot be resized or freed.
    """
    if isinstance(obj, (bytes, str)):
        raise TypeError(
            "a segment must be writable: use a bytearray or a numpy array, not %s"
            % type(obj).__name__
        )
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError(
            "a segment must support the buffer protocol (bytearray, numpy array...), not %s"
            % type(obj).__name__
        ) from None
    if mv.readonly:
        raise TypeError("a segment must be writable; %s is read-only" % type(obj).__name__)
    if not mv.c_contiguous:
        raise ValueError("a segment must be C-contiguous (copy it with numpy.ascontiguousarray)")
    flat = mv.cast("B") if (mv.ndim != 1 or mv.format != "B") else mv
    n = flat.nbytes
    if n == 0:
        return flat, 0, None
    carr = (ctypes.c_char * n).from_buffer(flat)
    return flat, ctypes.addressof(carr), carr


def view_of(address: int, nbytes: int, writable: bool = True) -> memoryview:
    """A memoryview over raw memory (no owner: valid only as long as the memory is)."""
    if nbytes == 0 or not address:
        return memoryview(b"")
    mv: memoryview = _lib.PyMemoryView_FromMemory(
        address, nbytes, _lib.PyBUF_WRITE if writable else _lib.PyBUF_READ
    )
    return mv
