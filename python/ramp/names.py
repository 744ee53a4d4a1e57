"""Names (include/ramp.h, "names"): handler names, and endpoint names published job-wide.

Handler names let processes that installed their handlers at different indices talk::

    ep.set_handler(17, on_ping)
    ramp.names.set_handler_name(ep, 17, "ping")
    ...
    h = ramp.names.lookup_handler(ep, peer_index, "ping")   # the index at that peer
    ep.request(peer_index, h, 1)

A look-up asks the peer once (one round trip of internal messages that run no
handler; handlers of this process may run while it waits, as in ``poll``), then
comes from a cache (dropped when the peer restarts).  A peer without such a handler:
:class:`ramp.BadArgError`; a peer that refuses, is unreachable or does not answer
within the peer timeout: :class:`ramp.ResourceError`.

Published names, in an SPMD job (:mod:`ramp.spmd`)::

    ramp.names.publish(job.endpoint, "server")             # on one rank
    name = ramp.names.lookup("server", timeout_ms=5000)    # on any: an EndpointName

No barrier is needed between the two, under any launcher (ramp-run, mpiexec, srun,
mpirun): a look-up asks the rank that keeps the service (chosen by a hash of the
string) again and again until the name is there or ``timeout_ms`` passed, polling
meanwhile (handlers may run).  A service is 1..48 characters of ``A-Z a-z 0-9 . _ -``,
published once per job (a second publish: :class:`ramp.ResourceError`).  Outside a
job, or when nothing appears within ``timeout_ms``: :class:`ramp.ResourceError`.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, byref, c_char_p, c_int, c_uint8, c_uint32, c_void_p
from typing import Union

from . import _lib
from ._lib import en_t
from .core import Endpoint, EndpointName, _after, _check, _handle_of

__all__ = ["MAX_HANDLER_NAME", "MAX_SERVICE", "set_handler_name", "lookup_handler", "publish", "lookup"]

#: Longest handler name, in bytes (printable ASCII).
MAX_HANDLER_NAME = 63
#: Longest service string, in bytes.
MAX_SERVICE = 48

_PROTOTYPES = {
    "ramp_SetHandlerName": (c_int, [c_void_p, c_uint8, c_char_p]),
    "ramp_LookupHandler": (c_int, [c_void_p, c_uint32, c_char_p, POINTER(c_uint8)]),
    "ramp_NamePublish": (c_int, [c_void_p, c_char_p]),
    "ramp_NameLookup": (c_int, [c_char_p, POINTER(en_t), c_int]),
}
Text = Union[str, bytes]


def _L() -> ctypes.CDLL:
    return _lib.declared(_PROTOTYPES)


def _text(s: Text, what: str) -> bytes:
    """The bytes of a name or service; the library checks them (NUL inside: refused here)."""
    if isinstance(s, str):
        try:
            b = s.encode("ascii")
        except UnicodeEncodeError:
            raise ValueError("%s must be ASCII: %r" % (what, s)) from None
    elif isinstance(s, (bytes, bytearray)):
        b = bytes(s)
    else:
        raise TypeError("%s must be str or bytes, not %s" % (what, type(s).__name__))
    if b"\0" in b:
        raise ValueError("%s must not contain NUL: %r" % (what, s))
    return b


def set_handler_name(ep: Endpoint, handler: int, name: Text) -> None:
    """``ramp_SetHandlerName``: names the handler installed at ``handler`` of ``ep``
    (1..63 printable ASCII characters; a name names one handler)."""
    e = _handle_of(ep, Endpoint, "ramp_SetHandlerName")
    if not 0 <= handler <= 255:
        raise ValueError("handler index must be 0..255, not %r" % (handler,))
    _check(
        _L().ramp_SetHandlerName(e, handler, _text(name, "a handler name")),
        "ramp_SetHandlerName",
    )


def lookup_handler(ep: Endpoint, dest: int, name: Text) -> int:
    """``ramp_LookupHandler``: the index of the handler named ``name`` at the peer of
    translation index ``dest`` (waits, polling; handlers may run)."""
    e = _handle_of(ep, Endpoint, "ramp_LookupHandler")
    if not 0 <= dest < 1 << 32:
        raise ValueError("translation index must be 0..2**32-1, not %r" % (dest,))
    out = c_uint8(0)
    rc = _L().ramp_LookupHandler(e, dest, _text(name, "a handler name"), byref(out))
    _after(rc, "ramp_LookupHandler")
    return out.value


def publish(ep: Endpoint, service: Text) -> None:
    """``ramp_NamePublish``: publishes ``ep``'s name under ``service`` for the job."""
    e = _handle_of(ep, Endpoint, "ramp_NamePublish")
    _after(_L().ramp_NamePublish(e, _text(service, "a service")), "ramp_NamePublish")


def lookup(service: Text, timeout_ms: int = 0) -> EndpointName:
    """``ramp_NameLookup``: the endpoint name published under ``service``, waiting up to
    ``timeout_ms`` milliseconds (0: one try) for it to appear."""
    if not 0 <= timeout_ms <= 2**31 - 1:
        raise ValueError("timeout_ms must be 0..2**31-1, not %r" % (timeout_ms,))
    out = en_t()
    rc = _L().ramp_NameLookup(_text(service, "a service"), byref(out), timeout_ms)
    _after(rc, "ramp_NameLookup")
    return EndpointName(out)
