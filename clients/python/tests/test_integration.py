"""Against real baton sidecars on a real control plane (see conftest.py).
The sidecars are shared, so these tests run one at a time, each from a
settled election."""

import asyncio
import queue
import signal
import threading
import time

import pytest

from baton_client import (AsyncClient, BatonError, Client, HttpClient, NotLeaderError,
                          SidecarUnavailableError, boottime)
from conformance import passed
from conftest import read_fixture, send, wait_settled, wait_stopped

FAST = dict(heartbeat_interval=0.3, min_backoff=0.05, max_backoff=0.5)


def test_leadership_read_over_grpc_and_http(settled):
    fx, li = settled
    leader = fx["sidecars"][li]
    with Client(leader["grpc"], **FAST) as c:
        state = c.leadership()
        assert state.is_leader and state.identity == leader["identity"] == state.holder_identity
        assert 0 < state.remaining() <= fx["renewDeadline"] and state.observed
        assert state.lease_name == fx["leaseName"] and state.lease_namespace == fx["namespace"]
        assert state.acquire_time is not None and state.lease_duration == fx["leaseDuration"]
        assert c.is_leader()
        assert c.require_leader(0.5) == state.fencing_token
        with pytest.raises(NotLeaderError, match="only"):
            c.require_leader(fx["renewDeadline"] + 1)
    http = HttpClient(leader["http"])
    assert http.require_leader(0.5) == state.fencing_token
    for i, s in enumerate(fx["sidecars"]):
        if i == li:
            continue
        with Client(s["grpc"], **FAST) as c:
            follower = c.leadership()
            assert not follower.is_leader and follower.remaining() == 0
            assert follower.holder_identity == leader["identity"]
            assert follower.fencing_token == state.fencing_token
            with pytest.raises(NotLeaderError, match=f"held by {leader['identity']}"):
                c.require_leader()
        with pytest.raises(NotLeaderError):
            HttpClient(s["http"]).require_leader()


def test_async_watch_sees_a_handover_with_a_higher_token(settled):
    fx, li = settled

    async def scenario():
        clients = [AsyncClient(s["grpc"], **FAST) for s in fx["sidecars"]]
        events: asyncio.Queue = asyncio.Queue()

        async def follow(i, c):
            async for state in c.watch():
                await events.put((i, state))

        tasks = [asyncio.ensure_future(follow(i, c)) for i, c in enumerate(clients)]
        try:
            before = await clients[li].leadership()
            first = {}
            while len(first) < len(clients):
                i, state = await asyncio.wait_for(events.get(), 10)
                assert state.error is None and state.is_leader == (i == li)
                first[i] = state
            send(fx["sidecars"][li], signal.SIGTERM)  # releases the Lease
            while True:
                i, state = await asyncio.wait_for(events.get(), 10)
                if i != li and state.is_leader:
                    assert state.fencing_token > before.fencing_token
                    return
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for c in clients:
                await c.close()

    asyncio.run(scenario())


def test_http_resign_hands_over(settled):
    fx, li = settled
    http = HttpClient(fx["sidecars"][li]["http"])
    token = http.require_leader()
    assert http.resign() is True
    assert not http.is_leader()
    fx2, li2 = wait_settled()
    assert li2 != li
    assert HttpClient(fx2["sidecars"][li2]["http"]).require_leader() > token


def test_require_leader_fails_after_the_leader_is_paused_past_its_validity(settled):
    fx, li = settled
    s = fx["sidecars"][li]
    with Client(s["grpc"], call_timeout=20, **FAST) as c:
        token = c.require_leader()
        stop = threading.Event()
        states: "queue.Queue" = queue.Queue()

        def follow():
            for state in c.watch(stop):
                states.put(state)

        watcher = threading.Thread(target=follow, daemon=True)
        watcher.start()
        assert states.get(timeout=5).is_leader
        send(s, signal.SIGSTOP)
        try:
            paused = time.monotonic()
            # The watch gives up leadership by the clock alone.
            state = states.get(timeout=fx["renewDeadline"] + 1)
            assert not state.is_leader and state.error is None
            assert time.monotonic() - paused <= fx["renewDeadline"] + 0.3
            answer: "queue.Queue" = queue.Queue()
            asker = threading.Thread(target=lambda: answer.put(_require(c)), daemon=True)
            asker.start()  # asked while paused, answered when it wakes
            time.sleep(fx["leaseDuration"] + 1)
        finally:
            send(s, signal.SIGCONT)
        assert isinstance(answer.get(timeout=10), NotLeaderError)
        with pytest.raises(NotLeaderError):
            c.require_leader()
        stop.set()
        watcher.join(5)
    fx2, li2 = wait_settled()
    assert li2 != li
    assert HttpClient(fx2["sidecars"][li2]["http"]).require_leader() > token


def test_require_leader_never_returns_a_token_while_the_sidecar_is_paused(settled):
    fx, li = settled
    s = fx["sidecars"][li]
    with Client(s["grpc"], **FAST) as c:
        answer = c.leadership()
        assert answer.is_leader
        send(s, signal.SIGSTOP)
        try:
            wait_stopped(s)
            pause_end = time.monotonic() + fx["leaseDuration"] + 1.5
            while time.monotonic() < pause_end:
                with pytest.raises(SidecarUnavailableError):
                    c.require_leader()
            assert answer.remaining() == 0
        finally:
            send(s, signal.SIGCONT)
        deadline = time.monotonic() + 5
        paused_ok = higher = False
        while time.monotonic() < deadline and not (paused_ok and higher):
            try:
                state = c.leadership()
                paused_ok = paused_ok or not state.is_leader or (
                    state.fencing_token > answer.fencing_token)
            except SidecarUnavailableError:
                pass
            for other in read_fixture()["sidecars"]:
                try:
                    lead = HttpClient(other["http"], timeout=0.5).leadership()
                    higher = higher or (lead.is_leader and lead.fencing_token > answer.fencing_token)
                except SidecarUnavailableError:
                    pass
            time.sleep(0.1)
        assert paused_ok, "the paused sidecar still answers leader with the old token"
        assert higher, f"no sidecar leads with a token above {answer.fencing_token} within 5s"
    passed("require-leader-after-pause")


def _require(c):
    try:
        return c.require_leader()
    except Exception as e:  # the test inspects it
        return e


def _wait_until_leader(kind, sidecar, timeout):
    """wait_until_leader through the HTTP, sync gRPC or asyncio client."""
    if kind == "http":
        return HttpClient(sidecar["http"]).wait_until_leader(timeout=timeout)
    if kind == "grpc":
        with Client(sidecar["grpc"], **FAST) as c:
            return c.wait_until_leader(timeout=timeout)

    async def wait():
        async with AsyncClient(sidecar["grpc"], **FAST) as c:
            return await c.wait_until_leader(timeout=timeout)

    return asyncio.run(wait())


@pytest.mark.parametrize("kind", ["http", "grpc", "aio"])
def test_wait_until_leader_returns_when_this_pod_takes_over(settled, kind):
    fx, li = settled
    want = (li + 1) % len(fx["sidecars"])
    with pytest.raises(TimeoutError):
        _wait_until_leader(kind, fx["sidecars"][want], 0.5)
    others = [s for i, s in enumerate(fx["sidecars"]) if i != want]
    for s in others:
        send(s, signal.SIGSTOP)
    try:
        state = _wait_until_leader(kind, fx["sidecars"][want], 15)
    finally:
        for s in others:
            send(s, signal.SIGCONT)
    assert state.is_leader and state.identity == fx["sidecars"][want]["identity"]


def test_sync_watch_reconnects_after_the_sidecar_restarts(settled):
    fx, li = settled
    s = fx["sidecars"][li]
    stop = threading.Event()
    with Client(s["grpc"], **FAST) as c:
        states = c.watch(stop)
        first = next(states)
        assert first.is_leader and first.identity == s["identity"]
        send(s, signal.SIGKILL)
        saw_outage = False
        # Restarted after 0.5s; the client must notice within its backoff.
        deadline = time.monotonic() + 8
        for state in states:
            assert time.monotonic() < deadline, "the watch never reconnected"
            if state.error is not None:
                assert isinstance(state.error, SidecarUnavailableError)
                assert not state.is_leader
                if not saw_outage:
                    with pytest.raises(SidecarUnavailableError):
                        c.leadership()
                saw_outage = True
                continue
            assert not (state.is_leader and state.identity == s["identity"])
            if state.identity != s["identity"]:
                break
        states.close()
        assert saw_outage
        assert state.identity == read_fixture()["sidecars"][li]["identity"]
        assert c.leadership().identity == state.identity
    passed("restarting-sidecar")


def _last_promise(sidecar, stop, out):
    """Asks the sidecar over HTTP until ``stop`` and puts the latest deadline
    of its leader answers in ``out``: an application that polls and never
    acknowledges."""
    http = HttpClient(sidecar["http"], timeout=0.5)
    latest = 0.0
    while not stop.is_set():
        try:
            state = http.leadership()
            if state.is_leader:
                latest = max(latest, state.valid_until)
        except SidecarUnavailableError:
            pass
        time.sleep(0.005)
    out.put(latest)


def test_sigterm_handover_carries_revisions_and_keeps_a_pollers_promises(settled):
    fx, li = settled
    leader = fx["sidecars"][li]
    with Client(leader["grpc"], **FAST) as c:
        before = c.leadership()
    now = boottime()
    assert now < before.valid_until <= now + fx["renewDeadline"]
    stop = threading.Event()
    promised: "queue.Queue" = queue.Queue()
    poller = threading.Thread(target=_last_promise, args=(leader, stop, promised), daemon=True)
    poller.start()
    watchers = [(i, Client(s["grpc"], **FAST)) for i, s in enumerate(fx["sidecars"])]
    states: "queue.Queue" = queue.Queue()

    def follow(i, c):
        for state in c.watch(stop):
            states.put((i, state, boottime()))

    for i, c in watchers:
        threading.Thread(target=follow, args=(i, c), daemon=True).start()
    try:
        time.sleep(0.3)
        send(leader, signal.SIGTERM)
        stepped_down, old_promise, successor = False, 0.0, None
        while not (stepped_down and successor):
            i, state, seen = states.get(timeout=10)
            if state.error is not None:
                continue  # the old leader's stream ends when it exits
            if i == li and state.identity == before.identity:
                if state.is_leader:
                    old_promise = max(old_promise, state.valid_until)
                if state.stepping_down or not state.is_leader:
                    stepped_down = True
            elif i != li and state.is_leader and successor is None:
                successor = (state, seen)
        stop.set()
        state, seen = successor
        last = promised.get(timeout=5)
        # The poller never acknowledged: its last promise had to lapse first;
        # and so did the last one the old leader's watch delivered.
        assert seen >= last, f"successor led {last - seen:.3f}s before a promise lapsed"
        assert seen >= old_promise, f"successor led {old_promise - seen:.3f}s before a watched promise lapsed"
        assert state.fencing_token > before.fencing_token
        assert before.fencing_revision > 0
        assert state.fencing_revision > before.fencing_revision
    finally:
        stop.set()
        for _, c in watchers:
            c.close()
    passed("watch-through-handover")


def test_run_while_leader_acknowledges_so_the_handover_is_fast(settled):
    fx, li = settled
    started: "queue.Queue" = queue.Queue()
    returned = {}
    stop = threading.Event()

    def work_beside(i):
        def work(term, cancelled):
            started.put((i, term, boottime()))
            cancelled.wait()
            time.sleep(0.02)  # the work winds down
            returned[term.fencing_token] = boottime()
        return work

    clients = [Client(s["grpc"], **FAST) for s in fx["sidecars"]]
    runners = [threading.Thread(target=c.run_while_leader, args=(work_beside(i),),
                                kwargs={"stop": stop}, daemon=True)
               for i, c in enumerate(clients)]
    for r in runners:
        r.start()
    try:
        i, first, _ = started.get(timeout=10)
        assert i == li
        # Let the promises settled() was given lapse: it never acknowledges.
        time.sleep(fx["renewDeadline"] + 0.2)
        # A fresh promise to the client running the work: only its
        # acknowledgement lets the next leader start before it lapses.
        promise = clients[li].leadership()
        assert promise.is_leader
        sent = boottime()
        send(fx["sidecars"][li], signal.SIGTERM)
        j, term, at = started.get(timeout=10)
        assert j != li
        assert returned.get(first.fencing_token, float("inf")) <= at, \
            "the new work started before the old one returned"
        assert at - sent < fx["renewDeadline"] / 2, f"handover took {at - sent:.3f}s"
        assert at < promise.valid_until, "the next leader waited for the acknowledged promise"
        assert term.fencing_token > first.fencing_token
        assert term.fencing_revision > first.fencing_revision
    finally:
        stop.set()
        for r in runners:
            r.join(10)
        for c in clients:
            c.close()
    passed("step-down-ack")


def test_http_acknowledge_step_down_gives_back_this_clients_promises_only(settled):
    fx, li = settled
    leader = fx["sidecars"][li]
    http = HttpClient(leader["http"])
    token = http.require_leader()
    assert http.acknowledge_step_down(token + 1) is False  # another term: ignored
    assert http.acknowledge_step_down(token) is True
    assert http.acknowledge_step_down(token) is False  # nothing left
    assert HttpClient(leader["http"]).acknowledge_step_down(token) is False
    with pytest.raises(BatonError, match="400"):
        HttpClient(leader["http"], client_id="x")._request(
            "POST", "/leader/ack", client_id="bad id", fencing_token=token)
