"""Exceptions raised by the ramp package.

Every AM-2 function returns an ``AM_*`` code; the Python API turns any code other
than ``AM_OK`` into an :class:`AMError` (a subclass per code), carrying the code,
its name, the C function that returned it and a message.  Messages the network
sent back (handler 0 of AM-2) become :class:`ReturnedMessageError` when no Python
error handler is installed.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from .constants import ErrorCode, Opcode, Status

__all__ = [
    "RampError",
    "LibraryNotFoundError",
    "AMError",
    "NotInitError",
    "BadArgError",
    "ResourceError",
    "NotSentError",
    "InUseError",
    "ReturnedMessageError",
    "HandlerKindError",
    "TokenExpiredError",
]


class RampError(Exception):
    """Base class of every exception raised by the ramp package."""


class LibraryNotFoundError(RampError, OSError):
    """libramp.so could not be loaded.

    ``tried`` lists ``(place, outcome)`` pairs, one for every location that was
    tried, in order; the message lists them too, with how to fix the problem.
    """

    def __init__(self, message: str, tried: Sequence[Tuple[str, str]] = ()) -> None:
        self.tried: List[Tuple[str, str]] = list(tried)
        super().__init__(message)


class AMError(RampError):
    """An AM-2 call returned an error code.

    Attributes:
        code: the ``AM_*`` return code (an :class:`~ramp.ErrorCode`).
        name: its name, e.g. ``"AM_ERR_BAD_ARG"``.
        function: the C function that returned it, e.g. ``"AM_Map"``.
        detail: what the Python side was doing, or an extra explanation.
    """

    code: int

    def __init__(self, code: int, function: str = "", detail: str = "") -> None:
        self.code = int(code)
        try:
            self.name = ErrorCode(self.code).name
        except ValueError:
            self.name = "AM_ERR_UNKNOWN(%d)" % self.code
        self.function = function
        self.detail = detail
        msg = "%s failed with %s (%d)" % (function or "AM call", self.name, self.code)
        if detail:
            msg += ": " + detail
        super().__init__(msg)

    def __reduce__(self) -> Tuple[type, Tuple[int, str, str]]:  # keeps the exception picklable
        return (type(self), (self.code, self.function, self.detail))


class NotInitError(AMError):
    """AM_ERR_NOT_INIT: layer or endpoint not initialised (e.g. before set_expected_resources)."""


class BadArgError(AMError):
    """AM_ERR_BAD_ARG: an invalid parameter."""


class ResourceError(AMError):
    """AM_ERR_RESOURCE: a resource problem, or a call made in the wrong state."""


class NotSentError(AMError):
    """AM_ERR_NOT_SENT: a synchronous message was not sent."""


class InUseError(AMError):
    """AM_ERR_IN_USE: resource busy (a non-blocking long request could not be sent now)."""


class ReturnedMessageError(RampError):
    """A message came back undelivered and no Python error handler was installed.

    Raised from the call (``poll``, ``wait``, ``request``...) during which the
    returned message was handled.  Attributes: ``status`` (an
    :class:`~ramp.Status`, e.g. ``EBADTAG``), ``opcode`` (an :class:`~ramp.Opcode`),
    ``handler`` (the handler index the message was sent to), ``tag`` and
    ``source`` (the peer that refused it; an :class:`~ramp.EndpointName` or None).
    """

    def __init__(
        self,
        status: int,
        opcode: int,
        handler: Optional[int] = None,
        tag: Optional[int] = None,
        source: object = None,
    ) -> None:
        try:
            self.status: int = Status(status)
        except ValueError:
            self.status = int(status)
        try:
            self.opcode: int = Opcode(opcode)
        except ValueError:
            self.opcode = int(opcode)
        self.handler = handler
        self.tag = tag
        self.source = source
        sname = self.status.name if isinstance(self.status, Status) else str(status)
        oname = self.opcode.name if isinstance(self.opcode, Opcode) else str(opcode)
        msg = "message returned undelivered: %s (%s" % (sname, oname)
        if handler is not None:
            msg += ", handler %d" % handler
        if tag is not None:
            msg += ", tag %#x" % tag
        if source is not None:
            msg += ", from %s" % source
        msg += ")"
        hint = _RETURN_HINTS.get(sname)
        if hint:
            msg += ": " + hint
        super().__init__(msg)


# What each return status tells the sender to look at.
_RETURN_HINTS = {
    "EBADARGS": "the target's handler takes another number of arguments than were sent",
    "EBADHANDLER": "no handler is installed at that index at the target",
    "EBADTAG": "the message's tag is not the target endpoint's tag (set_tag / map)",
    "EBADENDPOINT": "the target has not mapped the sender in its translation table",
    "EBADSEGOFF": "the target has no segment, or the offset is outside it",
    "EBADLENGTH": "the payload does not fit (medium limit, or past the segment's end)",
    "EUNREACHABLE": "the target did not answer within RAMP_PEER_TIMEOUT_MS (dead?)",
    "ECONGESTION": "the target kept refusing for want of buffer",
}


class HandlerKindError(RampError):
    """A message reached a Python handler registered for another category.

    A handler is registered for short messages or for medium/long ("bulk") ones;
    ctypes calls it through a fixed C prototype, so a message of the other kind
    cannot be decoded.  Raised from the call that ran the handler.
    """


class TokenExpiredError(RampError):
    """A :class:`~ramp.Token` was used after its handler returned."""
