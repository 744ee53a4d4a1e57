"""Error paths: bad handler indices, wrong tags, segment overflow, handler exceptions,
handler-kind mismatches, returned messages, bad arguments."""

from __future__ import annotations

import pytest

import ramp
from conftest import TAG, ready


# ---- handler indices -----------------------------------------------------------------


def test_bad_handler_index_at_registration(pair):
    b, x, y = pair
    for bad in (256, -1, 1000):
        with pytest.raises(ramp.BadArgError) as e:
            y.set_handler(bad, lambda tok: None)
        assert e.value.code == ramp.AM_ERR_BAD_ARG and e.value.name == "AM_ERR_BAD_ARG"
        assert e.value.function == "AM_SetHandler" and "0..255" in str(e.value)
    ready(x, y)
    with pytest.raises(ramp.BadArgError):
        x.request(0, 256)
    with pytest.raises(ramp.BadArgError):
        x.request_medium(0, -1, b"")
    with pytest.raises(ramp.BadArgError):
        x.request_long(0, 999, b"", 0)
    with pytest.raises(ramp.BadArgError, match="translation index"):
        x.request(-1, 1)


def test_unregistered_handler_returns_ebadhandler(pair):
    """A message to a handler index nobody registered comes back: EBADHANDLER."""
    b, x, y = pair
    ready(x, y)
    x.request(0, 200, 1, 2)
    with pytest.raises(ramp.ReturnedMessageError) as e:
        b.wait(timeout=300)
    err = e.value
    assert err.status == ramp.EBADHANDLER and err.opcode == ramp.AM_REQUEST_M
    assert err.handler == 200 and err.tag == TAG and err.source == y.name
    assert "EBADHANDLER" in str(err) and "AM_REQUEST_M" in str(err)


def test_error_handler_receives_returned_messages(pair):
    b, x, y = pair
    got = []

    def on_returned(status, opcode, tok):
        got.append(
            (
                status,
                opcode,
                tok.handler,
                tok.category,
                tok.is_request,
                tok.returned,
                tok.source,
                ramp.status_name(status),
            )
        )
        with pytest.raises(ramp.ResourceError):
            tok.reply(1)  # a returned message cannot be replied to

    x.set_error_handler(on_returned)
    y.set_segment(bytearray(16))
    y.set_handler(202, lambda tok, buf: None, kind="long", nargs=0)
    ready(x, y)
    x.request_medium(0, 201, b"abc")  # unregistered
    x.request_long(0, 202, b"0123456789", 10)  # past the end of y's 16-byte segment
    assert b.wait(lambda: len(got) == 2, timeout=300)
    assert got[0] == (
        ramp.EBADHANDLER,
        ramp.AM_REQUEST_IM,
        201,
        ramp.Category.MEDIUM,
        True,
        True,
        y.name,
        "EBADHANDLER",
    )
    assert got[1][:2] == (ramp.EBADLENGTH, ramp.AM_REQUEST_XFER_M)
    assert isinstance(got[1][0], ramp.Status) and isinstance(got[1][1], ramp.Opcode)
    assert got[1][1].category == ramp.Category.LONG and got[1][1].is_request
    x.set_error_handler(None)  # back to the default: ReturnedMessageError
    x.request(0, 203)
    with pytest.raises(ramp.ReturnedMessageError):
        b.wait(timeout=300)
    with pytest.raises(TypeError):
        x.set_error_handler(42)  # type: ignore[arg-type]


def test_handler_zero_is_the_error_handler(pair):
    b, x, y = pair
    got = []
    x.set_handler(0, lambda status, opcode, tok: got.append(status))
    ready(x, y)
    x.request(0, 99)
    assert b.wait(lambda: got, timeout=300)
    assert got == [ramp.EBADHANDLER]


# ---- tags -----------------------------------------------------------------------------


def test_wrong_tag_returns_ebadtag(pair):
    b, x, y = pair
    y.set_handler(1, lambda tok: None)
    ready(x, y)
    assert x.translation_tag(0) == TAG
    x.set_translation_tag(0, TAG + 1)  # legal after set_expected_resources
    x.request(0, 1)
    with pytest.raises(ramp.ReturnedMessageError) as e:
        b.wait(timeout=300)
    assert e.value.status == ramp.EBADTAG and e.value.tag == TAG + 1


def test_tag_none_refuses_and_all_accepts(pair):
    b, x, y = pair
    got = []
    y.set_handler(1, lambda tok: got.append(tok.tag))
    ready(x, y)
    y.tag = ramp.AM_NONE
    assert y.tag == ramp.AM_NONE
    x.request(0, 1)
    with pytest.raises(ramp.ReturnedMessageError) as e:
        b.wait(timeout=300)
    assert e.value.status == ramp.EBADTAG
    y.tag = ramp.AM_ALL
    x.set_translation_tag(0, 0x1234)
    x.request(0, 1)
    assert b.wait(lambda: got, timeout=300)
    assert got == [0x1234]


# ---- segments ---------------------------------------------------------------------------


def test_segment_overflow(pair):
    b, x, y = pair
    y.set_handler(5, lambda tok, buf: None, kind="long", nargs=0)
    ready(x, y)
    x.request_long(0, 5, b"data", 0)  # y has no segment
    with pytest.raises(ramp.ReturnedMessageError) as e:
        b.wait(timeout=300)
    assert e.value.status == ramp.EBADSEGOFF and e.value.opcode == ramp.AM_REQUEST_XFER_M
    y.set_segment(bytearray(100))
    x.request_long(0, 5, bytes(50), 60)  # 60 + 50 > 100
    with pytest.raises(ramp.ReturnedMessageError) as e:
        b.wait(timeout=300)
    assert e.value.status == ramp.EBADLENGTH
    with pytest.raises(ramp.BadArgError, match="negative destination offset"):
        x.request_long(0, 5, b"x", -8)
    with pytest.raises(ramp.BadArgError, match="long limit.*in pieces"):
        x.request_long(0, 5, bytes(ramp.MAX_LONG + 1), 0)


def test_segment_overflow_loopback():
    with ramp.Bundle() as b:
        ep = b.allocate_endpoint()
        ep.tag = TAG
        ep.map(0, ep.name, TAG)
        ep.set_segment(bytearray(8))
        ep.set_handler(5, lambda tok, buf: None, kind="long", nargs=0)
        ready(ep)
        with pytest.raises(ramp.BadArgError) as e:
            ep.request_long(0, 5, bytes(9), 0)
        assert e.value.function == "AM_RequestXfer"


# ---- exceptions raised by handlers ------------------------------------------------------


class Boom(Exception):
    pass


def test_handler_exception_raised_from_poll(pair):
    b, x, y = pair

    def bad(tok, v):
        raise Boom("handler failed with %d" % v)

    y.set_handler(1, bad)
    ready(x, y)
    x.request(0, 1, 7)
    with pytest.raises(Boom, match="handler failed with 7") as e:
        b.wait(timeout=300)
    assert any(f.name == "bad" for f in e.traceback)  # the handler's frame is kept
    x.request(0, 1, 8)  # the endpoint still works (ramp auto-replied)
    with pytest.raises(Boom, match="8"):
        b.wait(timeout=300)


def test_handler_exceptions_queue_in_order(pair):
    """Several handlers raising during one call: raised one per call, in order."""
    b, x, y = pair

    def bad(tok, v):
        raise Boom(v)

    y.set_handler(1, bad)
    ready(x, y)
    raised = []

    def call(f, *a):
        try:
            f(*a)
        except Boom as e:
            raised.append(e.args[0])

    for v in range(1, 5):
        call(x.request, 0, 1, v)  # requests poll first: they may raise too
    for _ in range(1000000):
        if len(raised) == 4:
            break
        call(b.poll)
    assert raised == [1, 2, 3, 4]


def test_loopback_handler_exception_raised_from_request():
    with ramp.Bundle() as b:
        ep = b.allocate_endpoint()
        ep.tag = TAG
        ep.map(0, ep.name, TAG)

        def bad(tok, v):
            raise Boom(v)

        ep.set_handler(1, bad)
        ready(ep)
        with pytest.raises(Boom) as e1:
            ep.request(0, 1, 1)  # loopback: raised from the request itself
        assert e1.value.args == (1,)


def test_keyboard_interrupt_in_handler_propagates(pair):
    b, x, y = pair

    def stop(tok):
        raise KeyboardInterrupt

    y.set_handler(1, stop)
    ready(x, y)
    x.request(0, 1)
    with pytest.raises(KeyboardInterrupt):
        b.wait(timeout=300)


# ---- handler kinds ----------------------------------------------------------------------


def test_short_message_to_bulk_handler(pair):
    b, x, y = pair
    called = []
    y.set_handler(3, lambda tok, buf: called.append(1), kind="bulk", nargs=0)
    ready(x, y)
    x.request(0, 3, 1, 2)  # buf would be garbage: the function is not called
    with pytest.raises(ramp.HandlerKindError, match="medium or long messages .* short request"):
        b.wait(timeout=300)
    assert not called


def test_medium_message_to_short_handler(pair):
    b, x, y = pair
    y.set_handler(3, lambda tok: None)
    ready(x, y)
    x.request_medium(0, 3, b"abc")
    with pytest.raises(ramp.HandlerKindError, match="short messages"):
        b.wait(timeout=300)


def test_long_message_to_medium_handler(pair):
    b, x, y = pair
    y.set_segment(bytearray(8))
    y.set_handler(3, lambda tok, buf: None, kind="medium")
    y.set_handler(4, lambda tok, buf: None, kind=ramp.Category.LONG)
    assert y.handlers[4][1] == "long"
    ready(x, y)
    x.request_long(0, 3, b"abc", 0)
    with pytest.raises(ramp.HandlerKindError, match="medium messages .* long request"):
        b.wait(timeout=300)
    x.request_medium(0, 4, b"abc")
    with pytest.raises(ramp.HandlerKindError, match="long messages .* medium request"):
        b.wait(timeout=300)


def test_argument_count_mismatch(pair, capfd):
    b, x, y = pair
    called = []
    y.set_handler(3, lambda tok, a: called.append(a))
    y.set_handler(4, lambda tok, buf, a, b_: called.append((a, b_)), kind="medium", nargs=2)
    ready(x, y)
    # a wrong argument count goes back to the sender's handler 0 with EBADARGS; the
    # target says so on stderr and keeps running
    x.request(0, 3, 1, 2)  # two arguments to a one-argument handler
    with pytest.raises(ramp.ReturnedMessageError, match="EBADARGS") as e:
        b.wait(until=lambda: False, timeout=300)
    assert e.value.status == ramp.EBADARGS
    x.request_medium(0, 4, b"abc", 7)  # one argument to a two-argument handler
    with pytest.raises(ramp.ReturnedMessageError, match="EBADARGS"):
        b.wait(until=lambda: False, timeout=300)
    assert not called
    err = capfd.readouterr().err
    assert "takes 1 argument(s); a request with 2 came and was returned" in err, err
    assert "takes 2 argument(s); a request with 1 came" in err, err
    x.request(0, 3, 5)
    b.wait(until=lambda: called, timeout=300)
    assert called == [5]


def test_registration_checks(pair):
    b, x, y = pair

    def varargs(tok, *a):
        pass

    with pytest.raises(TypeError, match="nargs"):
        y.set_handler(1, varargs)
    y.set_handler(1, varargs, nargs=16)
    with pytest.raises(ValueError, match="nargs must be 0..16"):
        y.set_handler(1, varargs, nargs=17)
    with pytest.raises(TypeError, match="positional"):
        y.set_handler(1, lambda: None)
    with pytest.raises(TypeError, match="cannot take"):
        y.set_handler(1, lambda tok, a: None, nargs=3)
    with pytest.raises(TypeError, match="cannot take"):
        y.set_handler(1, lambda tok, a, b, c: None, nargs=1)
    with pytest.raises(ValueError, match="kind must be"):
        y.set_handler(1, lambda tok: None, kind="huge")
    with pytest.raises(TypeError, match="signature"):
        y.set_handler(1, _NoSignature())
    y.set_handler(1, _NoSignature(), nargs=2)
    assert y.handlers[1][1:] == ("short", 2)


class _NoSignature:
    """A callable whose signature inspect cannot read."""

    __signature__ = property(lambda self: (_ for _ in ()).throw(ValueError("no signature")))

    def __call__(self, *a):
        pass


def test_bad_arguments(pair):
    b, x, y = pair
    ready(x, y)
    with pytest.raises(ramp.BadArgError, match="at most 16"):
        x.request(0, 1, *range(17))
    with pytest.raises(OverflowError):
        x.request(0, 1, 2**32)
    with pytest.raises(OverflowError):
        x.request(0, 1, -(2**31) - 1)
    with pytest.raises(TypeError, match="integers"):
        x.request(0, 1, 1.5)
    # the library's reason travels with the code (ramp_LastError)
    with pytest.raises(ramp.BadArgError, match="not mapped"):
        x.request(5, 1)  # translation entry 5 is not mapped
    # a new user's mistake: the message says what to do instead
    with pytest.raises(ramp.BadArgError, match="medium limit.*request_long.*in pieces"):
        x.request_medium(0, 1, bytes(ramp.MAX_MEDIUM + 1))
    with pytest.raises(ramp.BadArgError):
        x.set_expected_resources(0, 2000)


def test_not_init_before_expected_resources(pair):
    b, x, y = pair
    with pytest.raises(ramp.NotInitError) as e:
        x.request(0, 1)
    assert e.value.code == ramp.AM_ERR_NOT_INIT


def test_error_classes():
    for code, cls in [
        (ramp.AM_ERR_NOT_INIT, ramp.NotInitError),
        (ramp.AM_ERR_BAD_ARG, ramp.BadArgError),
        (ramp.AM_ERR_RESOURCE, ramp.ResourceError),
        (ramp.AM_ERR_NOT_SENT, ramp.NotSentError),
        (ramp.AM_ERR_IN_USE, ramp.InUseError),
    ]:
        from ramp.core import error_for

        e = error_for(code, "AM_Something", "detail")
        assert type(e) is cls and isinstance(e, ramp.AMError) and isinstance(e, ramp.RampError)
        assert e.code == code and e.function == "AM_Something" and "detail" in str(e)
        assert ramp.error_name(code) == e.name
        import pickle

        assert pickle.loads(pickle.dumps(e)).code == code
    assert ramp.AMError(99).name == "AM_ERR_UNKNOWN(99)"
    r = ramp.ReturnedMessageError(77, 88)
    assert r.status == 77 and r.opcode == 88
    assert issubclass(ramp.LibraryNotFoundError, OSError)
    assert issubclass(ramp.HandlerKindError, ramp.RampError)
    assert issubclass(ramp.TokenExpiredError, ramp.RampError)


# ---- arguments of the wrong type ---------------------------------------------------


def test_module_functions_name_the_object_they_expected(pair):
    """ramp.rma, ramp.txn and ramp.names take an endpoint (or a bundle) first: anything
    else is a TypeError naming the call and what it got, not an AttributeError about
    the package's insides."""
    from ramp import names, rma, txn

    calls = [
        (lambda o: rma.fence(o), "ramp_Fence"),
        (lambda o: rma.put(o, 0, 0, 0, b"x"), "ramp_Put"),
        (lambda o: rma.get(o, 0, 0, 0, bytearray(4)), "ramp_Get"),
        (lambda o: rma.alloc_region(o, 4096), "ramp_AllocRegion"),
        (lambda o: rma.register_region(o, bytearray(64)), "ramp_RegisterRegion"),
        (lambda o: rma.alloc_segment(o, 4096), "ramp_AllocSegment"),
        (lambda o: rma.wait_flag(o, bytearray(8), 0, 1), "ramp_WaitFlag"),
        (lambda o: rma.set_progress_thread(o, True), "ramp_SetProgressThread"),
        (lambda o: txn.request(o, 0, 1), "ramp_RequestTxn"),
        (lambda o: txn.list_txns(o, 0), "ramp_TxnList"),
        (lambda o: txn.set_handler_timeout(o, 10), "ramp_SetHandlerTimeout"),
        (lambda o: txn.log_open(o, "/tmp/x.ramplog"), "ramp_LogOpen"),
        (lambda o: txn.Txn(o, 1), "ramp.txn.Txn"),
        (lambda o: names.set_handler_name(o, 1, "h"), "ramp_SetHandlerName"),
        (lambda o: names.lookup_handler(o, 0, "h"), "ramp_LookupHandler"),
        (lambda o: names.publish(o, "svc"), "ramp_NamePublish"),
    ]
    for call, function in calls:
        for wrong in (None, 3, "ep", object()):
            with pytest.raises(TypeError) as e:
                call(wrong)
            assert function in str(e.value) and type(wrong).__name__ in str(e.value), str(e.value)
    b, x, y = pair
    with pytest.raises(TypeError, match="a bundle|ramp.Bundle"):
        rma.set_progress_thread(x, True)
    with pytest.raises(TypeError, match="transaction id"):
        txn.Txn(x, -1)


def test_statistics_helpers_refuse_what_is_not_statistics(pair):
    b, x, y = pair
    with pytest.raises(TypeError, match="ramp_stats_t"):
        ramp.statistics_to_dict({"RequestsSent": 1})
    for wrong in (None, 3, b"abc", [1]):
        with pytest.raises(TypeError, match="statistics dict"):
            ramp.format_statistics(wrong)
        with pytest.raises(TypeError, match="statistics dict"):
            ramp.aggregate_statistics(x.statistics(), wrong)
    with pytest.raises(KeyError, match="lacks"):
        ramp.format_statistics({})
    # and what is statistics still works
    assert "requests sent" in ramp.format_statistics(x.statistics())


def test_hostile_arguments_to_every_public_call_raise_and_never_crash():
    """Thousands of calls with hostile arguments (scripts/hostile_args.py), each seed
    in a process of its own: the process must end normally (a signal from the C side
    would end it), every failed call with a Python exception that describes it."""
    import os
    import subprocess
    import sys

    from conftest import SCRIPTS, describe

    for seed in (1, 2, 3):
        r = subprocess.run([sys.executable, os.path.join(SCRIPTS, "hostile_args.py"), str(seed)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, describe(r)
        lines = r.stdout.splitlines()
        assert lines and lines[-1].startswith("CALLS "), describe(r)
        assert int(lines[-1].split()[1]) > 500, lines[-1]
        odd = [line for line in lines if line.startswith("ODD ")]
        assert not odd, "\n".join(odd)
