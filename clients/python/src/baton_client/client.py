"""Client: the sidecar's gRPC API, blocking. Needs the ``grpc`` extra
(``pip install "baton-client[grpc]"``)."""

from __future__ import annotations

import queue
import threading
import time
from typing import Iterator, Optional

import grpc

from ._address import DEFAULT_GRPC_ADDR, ENV_GRPC_ADDR, resolve
from ._grpc_common import channel_options, translate, watch_request
from .errors import BatonError, SidecarUnavailableError
from .leadership import (Backoff, Leadership, StreamStalled, WatchTracker, check_leader,
                         from_proto, sleep_unless_stopped, wait_for_leader)
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
    """

    def __init__(self, addr: Optional[str] = None, *, call_timeout: float = 2.0,
                 heartbeat_interval: float = 1.0, min_backoff: float = 0.1,
                 max_backoff: float = 2.0) -> None:
        self.addr = resolve(addr, ENV_GRPC_ADDR, DEFAULT_GRPC_ADDR, allow_unix=True)
        self.call_timeout = call_timeout
        self.heartbeat_interval = heartbeat_interval
        self._min_backoff, self._max_backoff = min_backoff, max_backoff
        self._channel = grpc.insecure_channel(  # loopback only
            self.addr, options=channel_options(min_backoff, max_backoff))
        self._stub = pb_grpc.LeaderElectionStub(self._channel)

    def close(self) -> None:
        """Closes the channel; calls and watches in flight fail."""
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def leadership(self, timeout: Optional[float] = None) -> Leadership:
        """The current state. Raises SidecarUnavailableError if no sidecar
        answers within ``timeout`` (default: call_timeout)."""
        sent = time.monotonic()
        try:
            msg = self._stub.GetLeadership(pb.GetLeadershipRequest(),
                                           timeout=timeout or self.call_timeout)
        except grpc.RpcError as e:
            raise translate(self.addr, e) from e
        return from_proto(msg, sent)

    def is_leader(self) -> bool:
        """Whether this pod leads right now. Raises SidecarUnavailableError
        if no sidecar answers: treat that as "not leader"."""
        return self.leadership().is_leader

    def require_leader(self, min_validity: float = 0.0, timeout: Optional[float] = None) -> int:
        """The fencing token to tag a write with, if this pod leads with at
        least ``min_validity`` seconds of guaranteed leadership left (counted
        from when the request was sent). Raises NotLeaderError or
        SidecarUnavailableError."""
        return check_leader(self.leadership(timeout), min_validity)

    def resign(self) -> bool:
        """Steps down now and releases the Lease so another pod takes over at
        once. When it returns, this sidecar already answers not-leader; it
        keeps campaigning. Returns whether this pod was leader."""
        try:
            resp = self._stub.Resign(pb.ResignRequest(), timeout=self.call_timeout)
        except grpc.RpcError as e:
            raise translate(self.addr, e) from e
        return resp.was_leader

    def watch(self, stop: Optional[threading.Event] = None) -> Iterator[Leadership]:
        """Yields the current state, then each change of leader, holder,
        token, stepping down, observed or Lease uid (not every renew), until
        ``stop`` is set or the loop breaks.

        When a leader's guarantee runs out before the sidecar confirms it
        again (a paused sidecar), it yields the state turned follower. When
        the stream breaks or goes silent it yields ``Leadership(error=...)``
        and reconnects with backoff; the first state after a reconnect is
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
        call = self._stub.WatchLeadership(watch_request(self.heartbeat_interval))
        received: "queue.Queue" = queue.Queue()

        def read() -> None:
            try:
                for msg in call:
                    received.put(from_proto(msg.leadership, time.monotonic()))
                received.put(_EOF)
            except grpc.RpcError as e:
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
