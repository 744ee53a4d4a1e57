"""Transactions from Python (ramp.txn): states, waiting, listing, refusals, the
handler-time bound, at-most-once under many transactions in flight."""

from __future__ import annotations

import pytest

import ramp
from ramp import txn
from conftest import ready

EBADHANDLER = 4


def test_transactions_end_processed_and_are_listed_until_released(pair):
    b, x, y = pair
    runs, replies = [], []
    y.set_handler(10, lambda tok, a: (runs.append(a), tok.reply(11, a + 1)))
    x.set_handler(11, lambda tok, a: replies.append(a))
    ready(x, y)
    ts = [txn.request(x, 0, 10, i) for i in range(100)]
    for t in ts:
        st = t.wait(10000)
        assert st is not None and st.done
        assert (st.ack, st.progress, st.abandon, st.status) == (txn.ACKED, txn.PROCESSED, 0, 0)
    assert sorted(runs) == list(range(100)), "each handler ran exactly once"
    assert sorted(replies) == list(range(1, 101))
    assert txn.list_txns(x, txn.PROCESSED) == [t.id for t in ts]
    m = txn.request_medium(x, 0, 12, b"abc")
    st = m.wait(10000)
    assert st is not None and st.abandon == txn.REFUSED and st.status == EBADHANDLER
    for t in ts + [m]:
        t.release()
    assert txn.list_txns(x, txn.PROCESSED) == []
    with pytest.raises(ramp.BadArgError):
        ts[0].state()
    with pytest.raises(ramp.BadArgError):
        txn.list_txns(x, 7)


def test_a_handler_past_the_bound_is_abandoned():
    import threading
    import time

    from conftest import TAG

    go, stop = threading.Event(), threading.Event()
    with ramp.Bundle() as bx, ramp.Bundle() as by:
        x, y = bx.allocate_endpoint(), by.allocate_endpoint()
        for ep, peer in ((x, y), (y, x)):
            ep.tag = TAG
            ep.map(0, peer.name, TAG)

        def slow(tok):
            # runs until the test has seen the bound end the transaction
            while not go.is_set():
                time.sleep(0.001)

        y.set_handler(10, slow)
        ready(x, y)

        def target():
            while not stop.is_set():
                by.poll()
                time.sleep(0.0005)

        th = threading.Thread(target=target)
        th.start()
        try:
            txn.set_handler_timeout(x, 20000)
            t = txn.request(x, 0, 10)
            st = t.wait(30000)
            assert st is not None
            want = (txn.ACKED, txn.PROCESSING, txn.HANDLER_TIMEOUT)
            assert (st.ack, st.progress, st.abandon) == want
            assert txn.list_txns(x, txn.PROCESSING) == [t.id]
            t.release()
            # without a bound, waiting with a timeout returns None while it runs
            txn.set_handler_timeout(x, 0)
            t2 = txn.request(x, 0, 10)
            assert t2.wait(0) is None
            go.set()
            st = t2.wait(30000)
            assert st is not None and st.progress == txn.PROCESSED
        finally:
            go.set()
            stop.set()
            th.join()
