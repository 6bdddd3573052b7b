"""HttpClient: the sidecar's HTTP API with nothing but the standard library
(urllib), for the simplest applications. It has no stream, so its watch
polls; use the gRPC Client when changes must arrive at once."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Iterator, Optional

from . import _leader_work
from ._address import DEFAULT_HTTP_ADDR, ENV_HTTP_ADDR, resolve
from ._lease import check_lease, expected_lease
from .errors import BatonError, SidecarUnavailableError, WrongLeaseError
from .leadership import (Backoff, HeardDeadlines, Leadership, WatchTracker, boottime,
                         check_leader, client_id_or_random, format_duration_ns, parse_json,
                         require_leader_bound_ns, sleep_unless_stopped, wait_for_leader)


def status_error(addr: str, request: str, status: int, reason: str) -> BatonError:
    """The error for an HTTP error status: 503 (the sidecar is shutting down,
    or at its connection limit) is SidecarUnavailableError, any other status
    a BatonError naming it."""
    if status == 503:
        return SidecarUnavailableError(addr, f"{request}: HTTP 503: {reason}", ENV_HTTP_ADDR)
    return BatonError(f"{request}: HTTP {status}: {reason}")


class HttpClient:
    """Client of one sidecar's HTTP API. Thread-safe; holds no connection.

    Args:
        addr: ``host:port``; default ``$BATON_HTTP_ADDR``, else 127.0.0.1:4040.
        timeout: seconds each request may take, so a paused sidecar cannot
            block the caller.
        client_id: sent as ``?client_id=`` with every GET /leader, as for
            Client (default: 16 random hex digits per client object).
        lease_name, lease_namespace: the Lease the sidecar must serve, as
            for Client (default ``$BATON_LEASE_NAME``,
            ``$BATON_LEASE_NAMESPACE``).
    """

    def __init__(self, addr: Optional[str] = None, *, timeout: float = 2.0,
                 client_id: Optional[str] = None, lease_name: Optional[str] = None,
                 lease_namespace: Optional[str] = None) -> None:
        self.addr = resolve(addr, ENV_HTTP_ADDR, DEFAULT_HTTP_ADDR, allow_unix=False)
        self.timeout = timeout
        self.client_id = client_id_or_random(client_id)
        self.lease = expected_lease(lease_name, lease_namespace)
        self._heard = HeardDeadlines()

    def _request(self, method: str, path: str, **query: object) -> tuple:
        """Returns (the body, boottime() when the request was sent)."""
        url = f"http://{self.addr}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        req = urllib.request.Request(url, method=method)
        sent = boottime()
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.read(), sent
        except urllib.error.HTTPError as e:
            reason = e.read(512).decode("utf-8", "replace").strip()
            raise status_error(self.addr, f"{method} {path}", e.code, reason) from e
        except OSError as e:  # refused, reset, timeout
            raise SidecarUnavailableError(self.addr, e, ENV_HTTP_ADDR) from e

    def _json(self, method: str, path: str, **query: object) -> dict:
        """The JSON object a POST answers; BatonError if it is malformed."""
        body, _ = self._request(method, path, **query)
        try:
            return json.loads(body)
        except ValueError as e:
            raise BatonError(f"{method} {path}: malformed answer: {e}") from e

    def leadership(self) -> Leadership:
        """The current state (GET /leader). Raises SidecarUnavailableError if
        no sidecar answers, WrongLeaseError if it serves another Lease than
        the expected one, BatonError for a malformed answer."""
        return self._leadership()

    def _leadership(self, max_valid_for_ns: Optional[int] = None) -> Leadership:
        """leadership(), asking for a promise of at most ``max_valid_for_ns``
        (None: the whole promise), sent in whole milliseconds rounded up."""
        query = {"client_id": self.client_id}
        if max_valid_for_ns is not None:
            query["max_valid_for"] = f"{-(-max_valid_for_ns // 10**6)}ms"
        body, sent = self._request("GET", "/leader", **query)
        return self._heard.note(check_lease(parse_json(body, sent), self.lease, self.addr))

    def is_leader(self) -> bool:
        """Whether this pod leads right now. Raises SidecarUnavailableError
        if no sidecar answers: treat that as "not leader"."""
        return self.leadership().is_leader

    def require_leader(self, min_validity: float = 0.0) -> int:
        """The fencing token to tag a write with, if this pod leads with at
        least ``min_validity`` seconds left (counted from when the sidecar
        answered). Raises NotLeaderError or SidecarUnavailableError.

        It asks for a promise of at most ``min_validity`` +
        REQUIRE_LEADER_SLACK (``?max_valid_for=``), as Client.require_leader."""
        return check_leader(self._leadership(require_leader_bound_ns(min_validity)), min_validity)

    def resign(self) -> bool:
        """Steps down now and releases the Lease (POST /resign). Returns
        whether this pod was leader. The sidecar keeps campaigning."""
        return bool(self._json("POST", "/resign").get("wasLeader", False))

    def acknowledge_step_down(self, fencing_token: int,
                              valid_until_boottime_ns: Optional[int] = None) -> bool:
        """POST /leader/ack: this application has stopped acting on the term
        ``fencing_token`` up to a deadline (see Client.acknowledge_step_down:
        by default the latest this client object received in that term).
        Returns whether that settled this client_id's promises of the term.

        An application that only polls GET /leader and never acknowledges
        still gets a safe handover, but a slow one: the sidecar releases the
        Lease only once the last promise it gave has lapsed, up to its
        --renew-deadline after the last answer."""
        up_to = (self._heard.up_to(fencing_token) if valid_until_boottime_ns is None
                 else valid_until_boottime_ns)
        body = self._json("POST", "/leader/ack", client_id=self.client_id,
                          fencing_token=int(fencing_token),
                          valid_until_boottime=format_duration_ns(up_to))
        return bool(body.get("acknowledged", False))

    def run_while_leader(self, work: "_leader_work.Work", *,
                         stop: Optional[threading.Event] = None,
                         poll_interval: float = 0.2) -> None:
        """Client.run_while_leader over HTTP: the term is seen to end by
        polling GET /leader every ``poll_interval`` seconds (and by the clock
        when the guarantee runs out between polls)."""
        _leader_work.run_while_leader(
            lambda s: self.watch(poll_interval=poll_interval, stop=s),
            self.acknowledge_step_down, work, stop)

    def watch(self, *, poll_interval: float = 0.2, stop: Optional[threading.Event] = None,
              min_backoff: float = 0.1, max_backoff: float = 2.0) -> Iterator[Leadership]:
        """Polls GET /leader and yields the current state, then each change
        (leader, holder, token, stepping down, observed), until ``stop`` is
        set or the loop breaks. A leader's state turns follower when its
        guarantee runs out between polls. While no sidecar answers, or it
        serves another Lease than the expected one, it yields
        ``Leadership(error=...)`` and retries with backoff."""
        backoff = Backoff(min_backoff, max_backoff)
        tracker = WatchTracker(stall_timeout=float("inf"))
        while not (stop and stop.is_set()):
            try:
                news = tracker.received(self.leadership())
                backoff.reset()
            except (SidecarUnavailableError, WrongLeaseError) as e:
                tracker = WatchTracker(stall_timeout=float("inf"))
                yield Leadership(error=e)
                sleep_unless_stopped(backoff.next(), stop)
                continue
            if news is not None:
                yield news
            wake = time.monotonic() + poll_interval
            while not (stop and stop.is_set()) and time.monotonic() < wake:
                sleep_unless_stopped(min(tracker.timeout(), wake - time.monotonic()), stop)
                expired = tracker.due()
                if expired is not None:
                    yield expired

    def wait_until_leader(self, timeout: Optional[float] = None, *,
                          poll_interval: float = 0.2) -> Leadership:
        """Blocks until this pod leads and returns that state. Keeps waiting
        through sidecar restarts; raises TimeoutError after ``timeout``
        seconds (None: wait forever)."""
        return wait_for_leader(
            lambda stop: self.watch(poll_interval=poll_interval, stop=stop), timeout)

