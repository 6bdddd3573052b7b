"""Client: the sidecar's gRPC API, blocking. Needs the ``grpc`` extra
(``pip install "baton-client[grpc]"``)."""

from __future__ import annotations

import queue
import threading
from typing import Iterator, Optional

import grpc
from google.protobuf import duration_pb2

from . import _leader_work
from ._address import DEFAULT_GRPC_ADDR, ENV_GRPC_ADDR, resolve
from ._grpc_common import channel_options, leadership_request, translate, watch_request
from ._lease import check_lease, expected_lease
from .errors import BatonError, SidecarUnavailableError
from .leadership import (Backoff, HeardDeadlines, Leadership, StreamStalled, WatchTracker,
                         boottime, check_leader, client_id_or_random, from_proto,
                         require_leader_bound_ns, sleep_unless_stopped, wait_for_leader)
from .v1 import leader_election_pb2 as pb
from .v1 import leader_election_pb2_grpc as pb_grpc

_EOF = object()


class Client:
    """Client of one sidecar's gRPC API. Thread-safe; use one per process
    and close it (or use it as a context manager).

    It connects lazily and reconnects with backoff when the sidecar restarts.
    Calls fail fast with SidecarUnavailableError while no sidecar answers.

    Args:
        addr: ``host:port``, ``:port`` or ``unix:PATH``; default
            ``$BATON_GRPC_ADDR``, else 127.0.0.1:4041.
        call_timeout: seconds a unary call may take, so a paused sidecar
            cannot block the caller.
        heartbeat_interval: how often a watch asks the sidecar to repeat the
            state when nothing changes; a watch silent for twice that plus a
            second is taken as stuck and reconnected.
        min_backoff, max_backoff: reconnection backoff bounds, in seconds.
        client_id: the name this client gives the sidecar with every
            question (1 to 64 characters from [A-Za-z0-9._-]); the sidecar
            records its leader answers under it as promises that
            :meth:`acknowledge_step_down` gives back. Default: 16 random hex
            digits per client object, which is what it should normally be.
        lease_name, lease_namespace: the Lease the sidecar must serve;
            default ``$BATON_LEASE_NAME`` and ``$BATON_LEASE_NAMESPACE``.
            Answers from a sidecar serving another Lease are refused with
            WrongLeaseError (an empty namespace checks the name only). None:
            any Lease.
    """

    def __init__(self, addr: Optional[str] = None, *, call_timeout: float = 2.0,
                 heartbeat_interval: float = 1.0, min_backoff: float = 0.1,
                 max_backoff: float = 2.0, client_id: Optional[str] = None,
                 lease_name: Optional[str] = None,
                 lease_namespace: Optional[str] = None) -> None:
        self.addr = resolve(addr, ENV_GRPC_ADDR, DEFAULT_GRPC_ADDR, allow_unix=True)
        self.client_id = client_id_or_random(client_id)
        self.lease = expected_lease(lease_name, lease_namespace)
        self.call_timeout = call_timeout
        self.heartbeat_interval = heartbeat_interval
        self._min_backoff, self._max_backoff = min_backoff, max_backoff
        self._channel = grpc.insecure_channel(  # loopback only
            self.addr, options=channel_options(min_backoff, max_backoff))
        self._stub = pb_grpc.LeaderElectionStub(self._channel)
        self._heard = HeardDeadlines()

    def close(self) -> None:
        """Closes the channel; calls and watches in flight fail."""
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def leadership(self, timeout: Optional[float] = None) -> Leadership:
        """The current state. Raises SidecarUnavailableError if no sidecar
        answers within ``timeout`` (default: call_timeout), WrongLeaseError if
        it serves another Lease than the expected one."""
        return self._leadership(timeout)

    def _leadership(self, timeout: Optional[float],
                    max_valid_for_ns: Optional[int] = None) -> Leadership:
        """leadership(), asking for a promise of at most ``max_valid_for_ns``
        (None: the whole promise)."""
        sent = boottime()
        try:
            msg = self._stub.GetLeadership(leadership_request(self.client_id, max_valid_for_ns),
                                           timeout=timeout or self.call_timeout)
        except grpc.RpcError as e:
            raise translate(self.addr, e) from e
        return self._heard.note(check_lease(from_proto(msg, sent), self.lease, self.addr))

    def is_leader(self) -> bool:
        """Whether this pod leads right now. Raises SidecarUnavailableError
        if no sidecar answers: treat that as "not leader"."""
        return self.leadership().is_leader

    def require_leader(self, min_validity: float = 0.0, timeout: Optional[float] = None) -> int:
        """The fencing token to tag a write with, if this pod leads with at
        least ``min_validity`` seconds of guaranteed leadership left (counted
        from when the sidecar answered). Raises NotLeaderError or
        SidecarUnavailableError.

        It asks the sidecar for a promise of at most ``min_validity`` +
        REQUIRE_LEADER_SLACK (1 s), so an application that never
        acknowledges holds up a handover by at most that much."""
        return check_leader(
            self._leadership(timeout, require_leader_bound_ns(min_validity)), min_validity)

    def resign(self) -> bool:
        """Steps down now and releases the Lease so another pod takes over at
        once. When it returns, this sidecar already answers not-leader; it
        keeps campaigning. Returns whether this pod was leader."""
        try:
            resp = self._stub.Resign(pb.ResignRequest(), timeout=self.call_timeout)
        except grpc.RpcError as e:
            raise translate(self.addr, e) from e
        return resp.was_leader

    def acknowledge_step_down(self, fencing_token: int,
                              valid_until_boottime_ns: Optional[int] = None) -> bool:
        """Tells the sidecar that this application has stopped acting on the
        leadership of the term ``fencing_token`` (its leader work was
        cancelled and has ended), up to the deadline it names: by default
        the latest ``valid_until_boottime_ns`` among the leader answers of
        that term this client object has received so far (0, naming nothing,
        if none), or the one given. The promises the sidecar gave this
        client up to that deadline are void from then on, so a sidecar that
        steps down (shutdown or resign) releases the Lease without waiting
        for them to lapse. A promise given later (the sidecar renewed in
        between) stays outstanding however late the acknowledgement arrives,
        and so does one given to another process using the same client_id.
        Returns whether that settled this client_id's promises of the term.

        Call it only once nothing in this process acts on this client's
        answers for that term; :meth:`run_while_leader` calls it for you.
        Without it the handover is still safe, only slower: the sidecar
        waits until its last promise lapses (up to its --renew-deadline)."""
        up_to = (self._heard.up_to(fencing_token) if valid_until_boottime_ns is None
                 else valid_until_boottime_ns)
        try:
            resp = self._stub.AcknowledgeStepDown(
                pb.AcknowledgeStepDownRequest(
                    client_id=self.client_id, fencing_token=fencing_token,
                    valid_until_boottime=duration_pb2.Duration(seconds=up_to // 10**9,
                                                               nanos=up_to % 10**9)),
                timeout=self.call_timeout)
        except grpc.RpcError as e:
            raise translate(self.addr, e) from e
        return resp.acknowledged

    def run_while_leader(self, work: "_leader_work.Work",
                         stop: Optional[threading.Event] = None) -> None:
        """Runs ``work(term, cancelled)`` whenever this pod leads, and
        acknowledges the step-down once it has returned, so a graceful
        handover takes milliseconds instead of a renew deadline::

            def work(term, cancelled):
                while not cancelled.is_set():
                    store.put(key, value, fencing_token=term.fencing_token)
                    cancelled.wait(1)

            client.run_while_leader(work, stop=shutdown)

        ``work`` runs on a thread of its own with the leader state that began
        the term. ``cancelled`` (a threading.Event) is set as soon as the term
        ends: a watched state says not leader or stepping down, the token or
        the sidecar changes, the guarantee runs out without news, the sidecar
        cannot be reached, or ``stop`` is set. ``work`` must then stop acting
        as leader and return; only then is the term acknowledged (errors of
        the acknowledgement are ignored: without it the handover is only
        slower). An exception ``work`` raises after ``cancelled`` was set is
        dropped. If ``work`` returns while the term goes on, the term is
        acknowledged and ``work`` runs again at the next term; if it raises,
        run_while_leader raises that exception. Otherwise it returns once
        ``stop`` is set and any running work has returned and been
        acknowledged. Each acknowledgement names the latest deadline this
        client object was answered with in the term (see
        :meth:`acknowledge_step_down`); a term whose work returned by itself
        is acknowledged again when it ends, covering the answers received
        meanwhile.

        The acknowledgement speaks for this client (its ``client_id``):
        while this runs, do not act as leader on this client's other answers
        outside ``work``."""
        _leader_work.run_while_leader(self.watch, self.acknowledge_step_down, work, stop)

    def watch(self, stop: Optional[threading.Event] = None) -> Iterator[Leadership]:
        """Yields the current state, then each change of leader, holder,
        token, stepping down, observed or Lease uid (not every renew), until
        ``stop`` is set or the loop breaks.

        When a leader's guarantee runs out before the sidecar confirms it
        again (a paused sidecar), it yields the state turned follower. When
        the stream breaks or goes silent, or the sidecar serves another Lease
        than the expected one, it yields ``Leadership(error=...)`` and
        reconnects with backoff; the first state after a reconnect is
        always yielded.
        """
        backoff = Backoff(self._min_backoff, self._max_backoff)
        while not (stop and stop.is_set()):
            connected = False
            try:
                for state in self._watch_stream(stop):
                    connected = True
                    yield state
                return  # stopped
            except BatonError as e:  # unreachable, stalled, or refused (too many watchers)
                if connected:
                    backoff.reset()
                yield Leadership(error=e)
            sleep_unless_stopped(backoff.next(), stop)

    def _watch_stream(self, stop: Optional[threading.Event]) -> Iterator[Leadership]:
        """One WatchLeadership stream; raises SidecarUnavailableError when it
        ends, fails or stalls."""
        call = self._stub.WatchLeadership(watch_request(self.heartbeat_interval, self.client_id))
        received: "queue.Queue" = queue.Queue()

        def read() -> None:
            try:
                for msg in call:
                    received.put(self._heard.note(check_lease(
                        from_proto(msg.leadership, boottime()), self.lease, self.addr)))
                received.put(_EOF)
            except (grpc.RpcError, BatonError) as e:
                received.put(e)

        reader = threading.Thread(target=read, name="baton-watch", daemon=True)
        reader.start()
        tracker = WatchTracker(stall_timeout=2 * self.heartbeat_interval + 1)
        try:
            while not (stop and stop.is_set()):
                wait = tracker.timeout() if stop is None else min(tracker.timeout(), 0.1)
                try:
                    item = received.get(timeout=wait)
                except queue.Empty:
                    try:
                        expired = tracker.due()
                    except StreamStalled as e:
                        raise SidecarUnavailableError(self.addr, e, ENV_GRPC_ADDR) from None
                    if expired is not None:
                        yield expired
                    continue
                if item is _EOF:
                    raise SidecarUnavailableError(
                        self.addr, "the sidecar ended the stream (shutting down)", ENV_GRPC_ADDR)
                if isinstance(item, grpc.RpcError):
                    raise translate(self.addr, item) from item
                if isinstance(item, BatonError):  # another Lease, or a malformed answer
                    raise item
                news = tracker.received(item)
                if news is not None:
                    yield news
        finally:
            call.cancel()

    def wait_until_leader(self, timeout: Optional[float] = None) -> Leadership:
        """Blocks until this pod leads and returns that state. Keeps waiting
        through sidecar restarts; raises TimeoutError after ``timeout``
        seconds (None: wait forever)."""
        return wait_for_leader(self.watch, timeout)
