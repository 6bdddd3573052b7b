"""Leadership, the state a sidecar reports, and the logic every client
shares: conversion from the wire, the require-leader decision and the
bookkeeping of a watch (what is news, when a guarantee runs out, when a
stream is stuck, how long to back off)."""

from __future__ import annotations

import dataclasses
import datetime
import random
import re
import threading
import time
from typing import Any, Callable, Iterator, Mapping, Optional

from .errors import NotLeaderError


@dataclasses.dataclass(frozen=True)
class Leadership:
    """What the sidecar reported at one moment.

    ``Leadership()`` means "not leader, nothing known", which is also what an
    application must assume while the sidecar cannot be reached; a watch then
    yields such a state with ``error`` set.
    """

    #: This pod held the Lease, within its renew deadline, when the sidecar
    #: answered.
    is_leader: bool = False
    #: This sidecar's holder identity (new for every sidecar process).
    identity: str = ""
    #: The Lease's holder as last observed; "" when nobody holds it.
    holder_identity: str = ""
    #: The token to tag writes with while ``is_leader``; otherwise the last
    #: observed leaseTransitions.
    fencing_token: int = 0
    lease_name: str = ""
    lease_namespace: str = ""
    #: metadata.uid of the Lease; changes when it is deleted and recreated.
    lease_uid: str = ""
    #: The Lease's acquireTime and renewTime (holder's wall clock), if known.
    acquire_time: Optional[datetime.datetime] = None
    renew_time: Optional[datetime.datetime] = None
    #: Seconds of guaranteed leadership left when the sidecar answered.
    valid_for: float = 0.0
    #: When that guarantee ends, on ``time.monotonic()``, counted from when the
    #: request was sent (unary calls) or the message arrived (watch); 0 when
    #: not leader. See :meth:`remaining`.
    valid_until: float = 0.0
    #: The Lease's leaseDurationSeconds, if known.
    lease_duration: Optional[float] = None
    #: The sidecar has read the Lease (or its absence) at least once.
    observed: bool = False
    #: The sidecar is shutting down or resigning.
    stepping_down: bool = False
    #: Set only on states a watch yields while the sidecar is unreachable.
    error: Optional[Exception] = None

    def remaining(self) -> float:
        """Seconds of guaranteed leadership left now (0 if not leader)."""
        if not self.is_leader:
            return 0.0
        return max(0.0, self.valid_until - time.monotonic())

    def _key(self) -> tuple:
        return (self.is_leader, self.observed, self.stepping_down, self.identity,
                self.holder_identity, self.lease_uid, self.fencing_token)

    def _expired(self) -> "Leadership":
        return dataclasses.replace(self, is_leader=False, valid_for=0.0, valid_until=0.0)


_RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


def _parse_time(value: Optional[str]) -> Optional[datetime.datetime]:
    if not value:
        return None
    m = _RFC3339.match(value)
    if not m:
        raise ValueError(f"not an RFC 3339 time: {value!r}")
    frac = (m.group(2) or "")[:6].ljust(6, "0")  # datetime holds microseconds
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.datetime.fromisoformat(f"{m.group(1)}.{frac}{zone}")


def _parse_duration(value: Optional[str]) -> Optional[float]:
    if value is None:
        return None
    if not value.endswith("s"):
        raise ValueError(f"not a proto3 JSON duration: {value!r}")
    return float(value[:-1])


def from_json(obj: Mapping[str, Any], since: float) -> Leadership:
    """Converts the proto3 JSON of a Leadership (GET /leader); ``since`` is the
    ``time.monotonic()`` its validity counts from."""
    is_leader = bool(obj.get("isLeader", False))
    valid_for = (_parse_duration(obj.get("validFor")) or 0.0) if is_leader else 0.0
    return Leadership(
        is_leader=is_leader,
        identity=obj.get("identity", ""),
        holder_identity=obj.get("holderIdentity", ""),
        fencing_token=int(obj.get("fencingToken", 0)),
        lease_name=obj.get("leaseName", ""),
        lease_namespace=obj.get("leaseNamespace", ""),
        lease_uid=obj.get("leaseUid", ""),
        acquire_time=_parse_time(obj.get("acquireTime")),
        renew_time=_parse_time(obj.get("renewTime")),
        valid_for=valid_for,
        valid_until=since + valid_for if is_leader else 0.0,
        lease_duration=_parse_duration(obj.get("leaseDuration")),
        observed=bool(obj.get("observed", False)),
        stepping_down=bool(obj.get("steppingDown", False)),
    )


def from_proto(msg: Any, since: float) -> Leadership:
    """Converts a baton.v1.Leadership message; ``since`` as in from_json."""
    utc = datetime.timezone.utc
    is_leader = msg.is_leader
    valid_for = msg.valid_for.ToTimedelta().total_seconds() if is_leader else 0.0
    return Leadership(
        is_leader=is_leader,
        identity=msg.identity,
        holder_identity=msg.holder_identity,
        fencing_token=msg.fencing_token,
        lease_name=msg.lease_name,
        lease_namespace=msg.lease_namespace,
        lease_uid=msg.lease_uid,
        acquire_time=msg.acquire_time.ToDatetime(utc) if msg.HasField("acquire_time") else None,
        renew_time=msg.renew_time.ToDatetime(utc) if msg.HasField("renew_time") else None,
        valid_for=valid_for,
        valid_until=since + valid_for if is_leader else 0.0,
        lease_duration=(msg.lease_duration.ToTimedelta().total_seconds()
                        if msg.HasField("lease_duration") else None),
        observed=msg.observed,
        stepping_down=msg.stepping_down,
    )


def check_leader(lead: Leadership, min_validity: float) -> int:
    """Returns ``lead``'s fencing token if it leads with at least
    ``min_validity`` seconds left; raises NotLeaderError otherwise."""
    remaining = lead.remaining()
    if not lead.is_leader or remaining <= 0 or remaining < min_validity:
        raise NotLeaderError(lead, min_validity, remaining)
    return lead.fencing_token


class StreamStalled(Exception):
    """A watch stream sent nothing for longer than its stall timeout."""


class WatchTracker:
    """The clock-driven part of a watch, shared by the sync, async and HTTP
    watches. Feed it every state received and call :meth:`due` when
    :meth:`timeout` has passed."""

    def __init__(self, stall_timeout: float) -> None:
        self._stall_timeout = stall_timeout
        self._stall_at = time.monotonic() + stall_timeout
        self._last: Optional[Leadership] = None

    def received(self, lead: Leadership) -> Optional[Leadership]:
        """Records a state; returns it if it is news (the first one, or a
        change other than times), else None."""
        self._stall_at = time.monotonic() + self._stall_timeout
        news = self._last is None or lead._key() != self._last._key()
        self._last = lead
        return lead if news else None

    def timeout(self) -> float:
        """Seconds until :meth:`due` has something to do."""
        deadline = self._stall_at
        if self._last is not None and self._last.is_leader:
            deadline = min(deadline, self._last.valid_until)
        return max(0.0, deadline - time.monotonic())

    def due(self) -> Optional[Leadership]:
        """Returns the leader state turned follower when its guarantee ran
        out; raises StreamStalled when nothing arrived for too long."""
        now = time.monotonic()
        if self._last is not None and self._last.is_leader and now >= self._last.valid_until:
            self._last = self._last._expired()
            return self._last
        if now >= self._stall_at:
            raise StreamStalled(f"no message from the sidecar for {self._stall_timeout:g}s")
        return None


class Backoff:
    """Exponential backoff with ±20% jitter between reconnection attempts."""

    def __init__(self, min_delay: float, max_delay: float) -> None:
        self._min, self._max = min_delay, max_delay
        self._next = min_delay

    def reset(self) -> None:
        self._next = self._min

    def next(self) -> float:
        """The delay before the next attempt."""
        delay = self._next * random.uniform(0.8, 1.2)
        self._next = min(2 * self._next, self._max)
        return delay


def sleep_unless_stopped(seconds: float, stop: Optional[threading.Event]) -> None:
    """Sleeps, returning early when ``stop`` is set."""
    if stop is not None:
        stop.wait(max(0.0, seconds))
    else:
        time.sleep(max(0.0, seconds))


def wait_for_leader(watch: Callable[[threading.Event], Iterator[Leadership]],
                    timeout: Optional[float]) -> Leadership:
    """wait_until_leader over any watch(stop) generator."""
    stop = threading.Event()
    timer = threading.Timer(timeout, stop.set) if timeout is not None else None
    if timer:
        timer.start()
    last_error: Optional[Exception] = None
    states = watch(stop)
    try:
        for state in states:
            if state.error is not None:
                last_error = state.error
            elif state.is_leader:
                return state
    finally:
        states.close()
        if timer:
            timer.cancel()
    suffix = f" (last error: {last_error})" if last_error else ""
    raise TimeoutError(f"not leader after {timeout:g}s{suffix}")
