"""The step-down handshake and the deadlines of answers, against fake
sidecars in this process (a gRPC server and an HTTP server): client ids on
every question, deadlines from valid_until_boottime, and run_while_leader's
order — work cancelled, work returned, then acknowledged."""

import asyncio
import http.server
import json
import threading
import time
import urllib.parse
from concurrent import futures

import pytest

grpc = pytest.importorskip("grpc")

from google.protobuf import duration_pb2  # noqa: E402

from baton_client import (REQUIRE_LEADER_SLACK, AsyncClient, BatonError, Client,  # noqa: E402
                          HttpClient, boottime)
from baton_client.leadership import from_json, from_proto  # noqa: E402
from baton_client.v1 import leader_election_pb2 as pb  # noqa: E402
from baton_client.v1 import leader_election_pb2_grpc as pb_grpc  # noqa: E402


class Journal:
    """What happened, in order, across threads."""

    def __init__(self):
        self._cond = threading.Condition()
        self.events = []

    def add(self, event):
        with self._cond:
            self.events.append(event)
            self._cond.notify_all()

    def wait_for(self, event, timeout=5.0):
        with self._cond:
            if not self._cond.wait_for(lambda: event in self.events, timeout):
                raise AssertionError(f"no {event!r} within {timeout}s; saw {self.events}")


def duration(seconds):
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(seconds * 1e9))
    return d


def leader_msg(valid_for, deadline=True, token=5, revision_decimal=""):
    msg = pb.Leadership(is_leader=True, identity="me", holder_identity="me", fencing_token=token,
                        fencing_revision=4711, fencing_revision_decimal=revision_decimal,
                        observed=True, valid_for=duration(valid_for))
    if deadline:
        msg.valid_until_boottime.CopyFrom(duration(boottime() + valid_for))
    return msg


class FakeSidecar(pb_grpc.LeaderElectionServicer):
    """Leads with token 5 until step_down is set, then says it is stepping
    down; an answer is produced, then held for `delay` before it is sent."""

    def __init__(self, journal, valid_for=10.0, delay=0.0, deadline=True, revision_decimal=""):
        self.journal = journal
        self.valid_for = valid_for
        self.delay = delay
        self.deadline = deadline
        self.revision_decimal = revision_decimal  # "": a sidecar 0.2.0 or earlier
        self.step_down = threading.Event()
        self.given = []  # the deadlines of the leader answers, in ns
        self.acked = []  # the deadline each acknowledgement named, in ns (None: none)
        self.bounds = []  # the max_valid_for each question asked for, in ns (None: none)

    def _bound(self, request):
        self.bounds.append(request.max_valid_for.ToNanoseconds()
                           if request.HasField("max_valid_for") else None)

    def _answer(self):
        msg = leader_msg(self.valid_for, self.deadline, revision_decimal=self.revision_decimal)
        self.given.append(msg.valid_until_boottime.ToNanoseconds())
        time.sleep(self.delay)
        return msg

    def GetLeadership(self, request, context):
        self._bound(request)
        self.journal.add(f"get {request.client_id}")
        return self._answer()

    def WatchLeadership(self, request, context):
        self._bound(request)
        self.journal.add(f"watch {request.client_id}")
        yield pb.WatchLeadershipResponse(leadership=self._answer())
        while not self.step_down.wait(0.05):
            if not context.is_active():
                return
        self.journal.add("stepping down")
        yield pb.WatchLeadershipResponse(leadership=pb.Leadership(
            identity="me", holder_identity="me", fencing_token=5, observed=True,
            stepping_down=True))
        while context.is_active():
            time.sleep(0.05)

    def AcknowledgeStepDown(self, request, context):
        self.acked.append(request.valid_until_boottime.ToNanoseconds()
                          if request.HasField("valid_until_boottime") else None)
        self.journal.add(f"ack {request.client_id} {request.fencing_token}")
        return pb.AcknowledgeStepDownResponse(acknowledged=True)


@pytest.fixture
def sidecar():
    """Starts a FakeSidecar(**kwargs); yields (fake, addr)."""
    servers = []

    def start(**kwargs):
        journal = Journal()
        fake = FakeSidecar(journal, **kwargs)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        pb_grpc.add_LeaderElectionServicer_to_server(fake, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append(server)
        return fake, f"127.0.0.1:{port}"

    yield start
    for s in servers:
        s.stop(0)


def recording_work(journal):
    def work(term, cancelled):
        assert term.fencing_token == 5 and term.fencing_revision == 4711 and term.remaining() > 0
        journal.add("work started")
        cancelled.wait()
        journal.add("work cancelled")
        time.sleep(0.1)  # winding down takes a while
        journal.add("work returned")
    return work


def run_in_thread(target, *args, **kwargs):
    t = threading.Thread(target=target, args=args, kwargs=kwargs, daemon=True)
    t.start()
    return t


def test_answers_count_from_the_sidecars_deadline_not_from_arrival():
    msg = leader_msg(valid_for=1.0)
    time.sleep(0.3)  # the answer sat in a queue
    lead = from_proto(msg, since=boottime())
    assert 0.6 < lead.remaining() <= 0.7
    assert lead.valid_until == pytest.approx(msg.valid_until_boottime.ToNanoseconds() / 1e9)
    assert lead.fencing_revision == 4711


def test_an_older_sidecars_answer_counts_from_since():
    lead = from_proto(leader_msg(valid_for=1.0, deadline=False), since=100.0)
    assert lead.valid_until == 101.0
    js = from_json({"isLeader": True, "validFor": "1.5s", "fencingRevision": "42"}, since=10.0)
    assert js.valid_until == 11.5 and js.fencing_revision == 42
    now = boottime()
    js = from_json({"isLeader": True, "validFor": "1.5s",
                    "validUntilBoottime": f"{now + 0.5:.9f}s"}, since=now)
    assert js.valid_until == pytest.approx(now + 0.5)
    assert from_json({"isLeader": False, "validUntilBoottime": "0s"}, since=now).valid_until == 0


def test_a_queued_answer_does_not_over_promise_on_any_grpc_path(sidecar):
    fake, addr = sidecar(valid_for=1.0, delay=0.4)
    with Client(addr) as c:
        assert 0.4 < c.leadership().remaining() <= 0.6
        stop = threading.Event()
        first = next(c.watch(stop))
        assert 0.4 < first.remaining() <= 0.6
        stop.set()


def test_grpc_answers_carry_128_bit_revisions_and_malformed_ones_are_refused(sidecar):
    _, addr = sidecar(revision_decimal=str(2**128 - 1))
    with Client(addr) as c:
        assert c.leadership().fencing_revision == 2**128 - 1
    _, addr = sidecar(revision_decimal="04711")
    with Client(addr) as c:
        with pytest.raises(BatonError, match="fencing_revision_decimal"):
            c.leadership()
        stop = threading.Event()
        first = next(c.watch(stop))
        stop.set()
        assert isinstance(first.error, BatonError) and not first.is_leader


def test_every_question_carries_the_client_id(sidecar):
    fake, addr = sidecar()
    with Client(addr) as c, Client(addr) as other:
        assert len(c.client_id) == 16 and c.client_id != other.client_id
        c.leadership()
        fake.journal.wait_for(f"get {c.client_id}")
        stop = threading.Event()
        next(c.watch(stop))
        stop.set()
        fake.journal.wait_for(f"watch {c.client_id}")
        assert c.acknowledge_step_down(5) is True
        fake.journal.wait_for(f"ack {c.client_id} 5")
    with pytest.raises(ValueError, match="client_id"):
        Client(addr, client_id="has space")
    assert Client(addr, client_id="app-1.a_b").client_id == "app-1.a_b"


def test_an_answer_keeps_the_sidecars_deadline_to_the_nanosecond():
    js = from_json({"isLeader": True, "validFor": "1s",
                    "validUntilBoottime": "1234567.123456789s"}, since=0.0)
    assert js.valid_until_boottime_ns == 1234567123456789
    assert from_json({"isLeader": True, "validFor": "1s", "validUntilBoottime": "7s"},
                     since=0.0).valid_until_boottime_ns == 7 * 10**9
    assert from_json({"isLeader": False, "validUntilBoottime": "0s"},
                     since=0.0).valid_until_boottime_ns == 0
    msg = leader_msg(valid_for=1.0)
    msg.valid_until_boottime.seconds, msg.valid_until_boottime.nanos = 1234567, 123456789
    assert from_proto(msg, since=0.0).valid_until_boottime_ns == 1234567123456789
    assert from_proto(msg, since=0.0)._expired().valid_until_boottime_ns == 0


def test_require_leader_asks_for_min_validity_plus_the_slack_and_nothing_else_does(sidecar):
    fake, addr = sidecar()
    with Client(addr) as c:
        assert c.require_leader(2.5) == 5
        assert c.require_leader() == 5
        c.leadership()
        c.is_leader()
        stop = threading.Event()
        next(c.watch(stop))
        stop.set()
        fake.journal.wait_for(f"watch {c.client_id}")
    assert REQUIRE_LEADER_SLACK == 1.0
    assert fake.bounds == [3_500_000_000, 1_000_000_000, None, None, None]


def test_async_require_leader_asks_for_min_validity_plus_the_slack(sidecar):
    fake, addr = sidecar()

    async def scenario():
        async with AsyncClient(addr) as c:
            assert await c.require_leader(0.25) == 5
            await c.leadership()
            await c.is_leader()

    asyncio.run(scenario())
    assert fake.bounds == [1_250_000_000, None, None]


def test_acknowledgements_name_the_latest_deadline_this_client_received(sidecar):
    fake, addr = sidecar()
    with Client(addr, client_id="shared") as c, Client(addr, client_id="shared") as other:
        c.leadership()
        c.leadership()
        mine = fake.given[-1]
        # Another process with the same client_id is answered later; this
        # client's acknowledgement does not cover that answer.
        other.leadership()
        assert fake.given[-1] > mine
        c.acknowledge_step_down(5)
        # A term it was never answered in: it names nothing.
        c.acknowledge_step_down(4)
        # Or the deadline it is given.
        c.acknowledge_step_down(5, valid_until_boottime_ns=42)
    assert fake.acked == [mine, 0, 42]


def test_async_acknowledgements_name_the_latest_deadline_received(sidecar):
    fake, addr = sidecar()

    async def scenario():
        async with AsyncClient(addr, client_id="aio-ack") as c:
            await c.leadership()
            await c.acknowledge_step_down(5)

    asyncio.run(scenario())
    assert fake.acked == [fake.given[-1]]


def test_run_while_leader_acknowledges_up_to_the_last_answer_it_received(sidecar):
    fake, addr = sidecar()
    stop = threading.Event()
    with Client(addr, client_id="sync-0") as c:
        runner = run_in_thread(c.run_while_leader, recording_work(fake.journal), stop=stop)
        fake.journal.wait_for("work started")
        fake.step_down.set()
        fake.journal.wait_for("ack sync-0 5")
        stop.set()
        runner.join(5)
    assert fake.acked == [fake.given[-1]]


def assert_cancelled_returned_acked(events, client_id):
    """The work's end and the acknowledgement, in that order, with nothing
    of the work's in between (the sidecar's own events aside)."""
    work = [e for e in events if e.startswith(("work", "ack"))]
    i = work.index("work cancelled")
    assert work[i:i + 3] == ["work cancelled", "work returned", f"ack {client_id} 5"], events


def test_sync_run_while_leader_cancels_waits_then_acknowledges(sidecar):
    fake, addr = sidecar()
    stop = threading.Event()
    with Client(addr, client_id="sync-1") as c:
        runner = run_in_thread(c.run_while_leader, recording_work(fake.journal), stop=stop)
        fake.journal.wait_for("work started")
        fake.step_down.set()
        fake.journal.wait_for("ack sync-1 5")
        assert fake.journal.events.index("stepping down") < fake.journal.events.index(
            "work cancelled")
        assert_cancelled_returned_acked(fake.journal.events, "sync-1")
        stop.set()
        runner.join(5)
        assert not runner.is_alive()


def test_sync_run_while_leader_ends_the_work_when_the_guarantee_runs_out(sidecar):
    fake, addr = sidecar(valid_for=0.3)
    stop = threading.Event()
    with Client(addr, client_id="sync-2", heartbeat_interval=10) as c:
        runner = run_in_thread(c.run_while_leader, recording_work(fake.journal), stop=stop)
        fake.journal.wait_for("work started")
        started = time.monotonic()
        fake.journal.wait_for("work cancelled")
        assert time.monotonic() - started < 0.45
        fake.journal.wait_for("ack sync-2 5")
        stop.set()
        runner.join(5)


def test_sync_run_while_leader_acknowledges_when_stopped(sidecar):
    fake, addr = sidecar()
    stop = threading.Event()
    with Client(addr, client_id="sync-3") as c:
        runner = run_in_thread(c.run_while_leader, recording_work(fake.journal), stop=stop)
        fake.journal.wait_for("work started")
        stop.set()
        runner.join(5)
        assert not runner.is_alive()
        assert_cancelled_returned_acked(fake.journal.events, "sync-3")


def test_sync_run_while_leader_raises_what_the_work_raises_while_leading(sidecar):
    fake, addr = sidecar()

    def work(term, cancelled):
        raise RuntimeError("the store is gone")

    with Client(addr, client_id="sync-4") as c:
        with pytest.raises(RuntimeError, match="the store is gone"):
            c.run_while_leader(work)
    fake.journal.wait_for("ack sync-4 5")


def test_async_run_while_leader_cancels_awaits_then_acknowledges(sidecar):
    fake, addr = sidecar()

    async def scenario():
        async with AsyncClient(addr, client_id="aio-1") as c:
            async def work(term):
                assert term.fencing_token == 5 and term.fencing_revision == 4711
                fake.journal.add("work started")
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    fake.journal.add("work cancelled")
                    await asyncio.sleep(0.1)
                    fake.journal.add("work returned")
                    raise

            runner = asyncio.ensure_future(c.run_while_leader(work))
            await asyncio.get_running_loop().run_in_executor(
                None, fake.journal.wait_for, "work started")
            fake.step_down.set()
            await asyncio.get_running_loop().run_in_executor(
                None, fake.journal.wait_for, "ack aio-1 5")
            assert not runner.done()
            # Cancelling the runner itself while a term runs: also acknowledged.
            runner.cancel()
            with pytest.raises(asyncio.CancelledError):
                await runner

    asyncio.run(scenario())
    assert_cancelled_returned_acked(fake.journal.events, "aio-1")


def test_async_run_while_leader_acknowledges_when_cancelled(sidecar):
    fake, addr = sidecar()

    async def scenario():
        async with AsyncClient(addr, client_id="aio-2") as c:
            async def work(term):
                fake.journal.add("work started")
                try:
                    await asyncio.sleep(3600)
                finally:
                    fake.journal.add("work cancelled")
                    fake.journal.add("work returned")

            runner = asyncio.ensure_future(c.run_while_leader(work))
            await asyncio.get_running_loop().run_in_executor(
                None, fake.journal.wait_for, "work started")
            runner.cancel()
            with pytest.raises(asyncio.CancelledError):
                await runner

    asyncio.run(scenario())
    assert_cancelled_returned_acked(fake.journal.events, "aio-2")


class FakeHttpSidecar(http.server.BaseHTTPRequestHandler):
    """GET /leader (leader until step_down) and POST /leader/ack."""

    journal: Journal
    step_down: threading.Event

    def _json(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(url.query)
        self.bounds.append(q.get("max_valid_for", [None])[0])
        self.journal.add(f"get {q.get('client_id', [''])[0]}")
        if self.step_down.is_set():
            self.journal.add("stepping down")
            return self._json({"isLeader": False, "identity": "me", "fencingToken": 5,
                               "observed": True, "steppingDown": True})
        deadline = f"{boottime() + 10:.9f}s"
        self.given.append(deadline)
        self._json({"isLeader": True, "identity": "me", "holderIdentity": "me",
                    "fencingToken": 5, "fencingRevision": "4711", "observed": True,
                    "validFor": "10s", "validUntilBoottime": deadline})

    def do_POST(self):
        url = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(url.query)
        assert url.path == "/leader/ack"
        self.acked.append(q.get("valid_until_boottime", [None])[0])
        self.journal.add(f"ack {q['client_id'][0]} {q['fencing_token'][0]}")
        self._json({"acknowledged": True})

    def log_message(self, *args):
        pass


def serve_http(journal):
    """Starts a FakeHttpSidecar; returns (its handler class, the server)."""
    handler = type("Handler", (FakeHttpSidecar,), {
        "journal": journal, "step_down": threading.Event(), "given": [], "acked": [],
        "bounds": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    run_in_thread(server.serve_forever)
    return handler, server


def test_http_require_leader_asks_for_min_validity_plus_the_slack_and_nothing_else_does():
    handler, server = serve_http(Journal())
    try:
        c = HttpClient(f"127.0.0.1:{server.server_port}")
        assert c.require_leader(0.5) == 5
        assert c.require_leader(0.0000001) == 5  # rounded up to the millisecond
        c.leadership()
        c.is_leader()
        assert handler.bounds == ["1500ms", "1001ms", None, None]
    finally:
        server.shutdown()
        server.server_close()


def test_http_run_while_leader_sends_the_client_id_and_acknowledges():
    journal = Journal()
    handler, server = serve_http(journal)
    try:
        c = HttpClient(f"127.0.0.1:{server.server_port}", client_id="http-1")
        assert c.leadership().fencing_revision == 4711
        journal.wait_for("get http-1")
        stop = threading.Event()
        runner = run_in_thread(c.run_while_leader, recording_work(journal), stop=stop,
                               poll_interval=0.05)
        journal.wait_for("work started")
        handler.step_down.set()
        journal.wait_for("ack http-1 5")
        assert_cancelled_returned_acked(journal.events, "http-1")
        # It names the deadline of the last leader answer it polled, as the
        # sidecar printed it.
        assert handler.acked == [handler.given[-1]]
        stop.set()
        runner.join(5)
        assert not runner.is_alive()
    finally:
        server.shutdown()
        server.server_close()
