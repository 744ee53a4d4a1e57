"""What every module of the API stands on: the loaded library (``_L``), an ``AM_*``
return code turned into its exception (``error_for``, ``_check``: the library's reason
for the failure goes with it) and endpoint names (:class:`EndpointName`).

Below :mod:`ramp.core` and the modules beside it (``paths``, ``names``, ``rma``...),
above ``_lib`` and ``errors``: it imports nothing of the API.
"""

from __future__ import annotations

import ctypes
from typing import Any, Dict, Type, Union

from . import _lib
from ._lib import en_t
from .constants import ErrorCode
from .errors import (
    AMError,
    BadArgError,
    InUseError,
    NotInitError,
    NotSentError,
    ResourceError,
)

_BY_CODE: Dict[int, Type[AMError]] = {
    ErrorCode.AM_ERR_NOT_INIT: NotInitError,
    ErrorCode.AM_ERR_BAD_ARG: BadArgError,
    ErrorCode.AM_ERR_RESOURCE: ResourceError,
    ErrorCode.AM_ERR_NOT_SENT: NotSentError,
    ErrorCode.AM_ERR_IN_USE: InUseError,
}


def error_for(code: int, function: str = "", detail: str = "") -> AMError:
    """Returns the :class:`AMError` subclass instance for an ``AM_*`` code.

    Without a ``detail`` of the caller's, the detail is the library's reason for the
    calling thread's last failure (``ramp_LastError``), e.g. "destination index is not
    mapped"; called right after the failing call, that reason is this call's.
    """
    if not detail:
        detail = _library_reason()
    cls = _BY_CODE.get(int(code), AMError)
    return cls(code, function, detail)


def _library_reason() -> str:
    """The text after "returned AM_ERR_...: " of ``ramp_LastError()``, or ""."""
    try:
        raw = _lib.lib().ramp_LastError()
    except Exception:  # no library (yet), or an older one without ramp_LastError
        return ""
    text = raw.decode("utf-8", "replace") if raw else ""
    _, sep, reason = text.partition(": ")
    return reason if sep else text


def _check(rc: int, function: str, detail: str = "") -> None:
    if rc:
        raise error_for(rc, function, detail)


def _L() -> ctypes.CDLL:
    return _lib.lib()


def _handle_of(obj: Any, cls: type, function: str) -> int:
    """The library handle of ``obj``, which a module function (``ramp.rma``,
    ``ramp.txn``, ``ramp.names``) takes as its endpoint or bundle: a clear
    TypeError for anything else."""
    if not isinstance(obj, cls):
        raise TypeError("%s: expects a ramp.%s, got %s" % (function, cls.__name__, type(obj).__name__))
    return int(obj._h())


class EndpointName:
    """A global endpoint name (``en_t``): 32 opaque bytes.

    Comparable (``ramp_enEqual``), hashable, printable (``ramp_enToString``, e.g.
    ``127.0.0.1:40123``) and convertible to and from bytes (:meth:`to_bytes`,
    :meth:`from_bytes`) to pass it to another process.
    """

    __slots__ = ("_en",)
    SIZE = ctypes.sizeof(en_t)

    def __init__(self, raw: Union[bytes, bytearray, memoryview, en_t]) -> None:
        if isinstance(raw, en_t):
            self._en = en_t.from_buffer_copy(raw)
        else:
            b = bytes(raw)
            if len(b) != self.SIZE:
                raise ValueError("an endpoint name is %d bytes, not %d" % (self.SIZE, len(b)))
            self._en = en_t.from_buffer_copy(b)

    @classmethod
    def from_bytes(cls, raw: Union[bytes, bytearray, memoryview]) -> "EndpointName":
        """The name whose :meth:`to_bytes` is ``raw`` (32 bytes)."""
        return cls(raw)

    def to_bytes(self) -> bytes:
        """The 32 bytes of the name (to send it to another process)."""
        return bytes(self._en)

    def __bytes__(self) -> bytes:
        return bytes(self._en)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, EndpointName):
            return NotImplemented
        return bool(_L().ramp_enEqual(self._en, other._en))

    def __ne__(self, other: object) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self) -> int:
        return hash(bytes(self._en))

    def __str__(self) -> str:
        buf = ctypes.create_string_buffer(128)
        _check(_L().ramp_enToString(self._en, buf, len(buf)), "ramp_enToString")
        return buf.value.decode()

    def __repr__(self) -> str:
        return "EndpointName(%r)" % str(self)
