"""Constants of the AM-2 API (include/am.h) and of ramp's extensions (include/ramp.h).

The values are the C ones; the enums are :class:`enum.IntEnum`, so they compare
equal to the plain integers the C API uses.
"""

from __future__ import annotations

import enum

__all__ = [
    "ErrorCode",
    "Status",
    "Opcode",
    "Category",
    "BundleMode",
    "EventMask",
    "AM_OK",
    "AM_ERR_NOT_INIT",
    "AM_ERR_BAD_ARG",
    "AM_ERR_RESOURCE",
    "AM_ERR_NOT_SENT",
    "AM_ERR_IN_USE",
    "EBADARGS",
    "EBADENTRY",
    "EBADTAG",
    "EBADHANDLER",
    "EBADSEGOFF",
    "EBADLENGTH",
    "EBADENDPOINT",
    "ECONGESTION",
    "EUNREACHABLE",
    "EREPLYREJECTED",
    "AM_REQUEST_M",
    "AM_REQUEST_IM",
    "AM_REQUEST_XFER_M",
    "AM_REPLY_M",
    "AM_REPLY_IM",
    "AM_REPLY_XFER_M",
    "AM_NONE",
    "AM_ALL",
    "AM_NOEVENTS",
    "AM_NOTEMPTY",
    "AM_SEQ",
    "AM_PAR",
    "MAX_SHORT",
    "MAX_MEDIUM",
    "MAX_LONG",
    "MAX_NUM_HANDLERS",
    "MAX_NUM_TRANSLATIONS",
    "MAX_NETWORK_DEPTH",
]


class ErrorCode(enum.IntEnum):
    """Return codes of every AM-2 function (``AM_OK`` = success)."""

    AM_OK = 0
    AM_ERR_NOT_INIT = 1
    AM_ERR_BAD_ARG = 2
    AM_ERR_RESOURCE = 3
    AM_ERR_NOT_SENT = 4
    AM_ERR_IN_USE = 5


class Status(enum.IntEnum):
    """Why a message was returned undelivered (passed to handler 0)."""

    EBADARGS = 1
    EBADENTRY = 2
    EBADTAG = 3
    EBADHANDLER = 4
    EBADSEGOFF = 5
    EBADLENGTH = 6
    EBADENDPOINT = 7
    ECONGESTION = 8
    EUNREACHABLE = 9
    EREPLYREJECTED = 10


class Opcode(enum.IntEnum):
    """Kind of a returned message (passed to handler 0)."""

    AM_REQUEST_M = 1
    AM_REQUEST_IM = 2
    AM_REQUEST_XFER_M = 3
    AM_REPLY_M = 4
    AM_REPLY_IM = 5
    AM_REPLY_XFER_M = 6

    @property
    def category(self) -> "Category":
        """The message category of this opcode."""
        return Category((int(self) - 1) % 3)

    @property
    def is_request(self) -> bool:
        """True for the request opcodes."""
        return int(self) <= 3


class Category(enum.IntEnum):
    """Message category (``ramp_category_t``): short, medium or long."""

    SHORT = 0
    MEDIUM = 1
    LONG = 2


class BundleMode(enum.IntEnum):
    """Bundle types: ``AM_SEQ`` (one thread at a time) or ``AM_PAR`` (many threads)."""

    AM_SEQ = 0
    AM_PAR = 1


class EventMask(enum.IntEnum):
    """Bundle event masks (``AM_SetEventMask``)."""

    AM_NOEVENTS = 0
    AM_NOTEMPTY = 1


AM_OK = ErrorCode.AM_OK
AM_ERR_NOT_INIT = ErrorCode.AM_ERR_NOT_INIT
AM_ERR_BAD_ARG = ErrorCode.AM_ERR_BAD_ARG
AM_ERR_RESOURCE = ErrorCode.AM_ERR_RESOURCE
AM_ERR_NOT_SENT = ErrorCode.AM_ERR_NOT_SENT
AM_ERR_IN_USE = ErrorCode.AM_ERR_IN_USE

EBADARGS = Status.EBADARGS
EBADENTRY = Status.EBADENTRY
EBADTAG = Status.EBADTAG
EBADHANDLER = Status.EBADHANDLER
EBADSEGOFF = Status.EBADSEGOFF
EBADLENGTH = Status.EBADLENGTH
EBADENDPOINT = Status.EBADENDPOINT
ECONGESTION = Status.ECONGESTION
EUNREACHABLE = Status.EUNREACHABLE
EREPLYREJECTED = Status.EREPLYREJECTED

AM_REQUEST_M = Opcode.AM_REQUEST_M
AM_REQUEST_IM = Opcode.AM_REQUEST_IM
AM_REQUEST_XFER_M = Opcode.AM_REQUEST_XFER_M
AM_REPLY_M = Opcode.AM_REPLY_M
AM_REPLY_IM = Opcode.AM_REPLY_IM
AM_REPLY_XFER_M = Opcode.AM_REPLY_XFER_M

#: Special tag: an endpoint whose own tag is AM_NONE accepts nothing.
AM_NONE: int = 0
#: Special tag: an endpoint whose own tag is AM_ALL accepts any tag.
AM_ALL: int = 1

AM_NOEVENTS = EventMask.AM_NOEVENTS
AM_NOTEMPTY = EventMask.AM_NOTEMPTY
AM_SEQ = BundleMode.AM_SEQ
AM_PAR = BundleMode.AM_PAR

#: AM_MaxShort(): maximum number of handler arguments.
MAX_SHORT: int = 16
#: AM_MaxMedium(): maximum medium payload, bytes.
MAX_MEDIUM: int = 65000
#: AM_MaxLong(): maximum long (Xfer) payload, bytes.
MAX_LONG: int = 1048576
#: AM_MaxNumHandlers(): size of the handler table.
MAX_NUM_HANDLERS: int = 256
#: AM_MaxNumTranslations(): maximum translation-table size.
MAX_NUM_TRANSLATIONS: int = 1 << 20
#: Largest network depth (credits per peer) accepted by set_expected_resources.
MAX_NETWORK_DEPTH: int = 1024
