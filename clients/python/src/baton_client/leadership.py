"""Leadership, the state a sidecar reports, and the logic every client
shares: the clock, client ids, conversion from the wire, the require-leader
decision and the bookkeeping of a watch (what is news, when a guarantee runs
out, when a stream is stuck, how long to back off)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import random
import re
import secrets
import threading
import time
from typing import Any, Callable, Iterator, Mapping, Optional

from .errors import BatonError, NotLeaderError
from .fence import parse_revision

if hasattr(time, "CLOCK_BOOTTIME"):
    def boottime() -> float:
        """Seconds on the node's CLOCK_BOOTTIME: time since boot, counting
        suspend. The sidecar's deadlines (``validUntilBoottime``) are on this
        clock; sidecar and application share the node's kernel, so such a
        deadline means the same instant in every container of the Pod."""
        return time.clock_gettime(time.CLOCK_BOOTTIME)

    _SHARES_SIDECAR_CLOCK = True
else:  # not Linux: no CLOCK_BOOTTIME, so the sidecar's deadlines are not used
    boottime = time.monotonic
    _SHARES_SIDECAR_CLOCK = False

#: How long a watch or run_while_leader sleeps on Python's timers (which run
#: on CLOCK_MONOTONIC and stop during a suspend) before it compares a
#: guarantee with boottime() again.
CLOCK_RECHECK = 0.1

#: What require_leader asks the sidecar for beyond ``min_validity``, in
#: seconds: a promise of at most ``min_validity + REQUIRE_LEADER_SLACK``
#: (``max_valid_for``). The slack covers the round trip, so that what is left
#: when the client checks is still at least ``min_validity``. The caller
#: learns only "at least min_validity left" and the token, so a longer
#: promise is of no use to it and would only delay a handover when the
#: application does not acknowledge.
REQUIRE_LEADER_SLACK = 1.0

_CLIENT_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def client_id_or_random(client_id: Optional[str]) -> str:
    """``client_id`` if given (ValueError unless it is 1 to 64 characters from
    [A-Za-z0-9._-]), else 16 random hex digits."""
    if client_id is None:
        return secrets.token_hex(8)
    if not _CLIENT_ID.match(client_id):
        raise ValueError(f"client_id {client_id!r} is not 1 to 64 characters from [A-Za-z0-9._-]")
    return client_id


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
    #: The second fencing token: the Lease's resourceVersion as written by
    #: the write that won this term while ``is_leader``; otherwise that of the
    #: last observed Lease. Unlike ``fencing_token`` it keeps growing across
    #: Lease deletion and a restart of every sidecar, but it is comparable
    #: only on Kubernetes >= 1.35 (see baton_client.fence). An ``int`` of up
    #: to 128 bits (KEP-5504), 0 .. 2**128-1: compare it as an integer. 0
    #: when unknown.
    fencing_revision: int = 0
    lease_name: str = ""
    lease_namespace: str = ""
    #: metadata.uid of the Lease; changes when it is deleted and recreated.
    lease_uid: str = ""
    #: The Lease's acquireTime and renewTime (holder's wall clock), if known.
    acquire_time: Optional[datetime.datetime] = None
    renew_time: Optional[datetime.datetime] = None
    #: Seconds of guaranteed leadership left when the sidecar produced the
    #: answer.
    valid_for: float = 0.0
    #: When that guarantee ends, on :func:`boottime` (CLOCK_BOOTTIME, which
    #: keeps counting through a suspend): the sidecar's own deadline, exact
    #: however long the answer took to arrive. From an older sidecar that
    #: sends none, counted from when the request was sent (unary calls) or
    #: the message arrived (watch). 0 when not leader. See :meth:`remaining`.
    valid_until: float = 0.0
    #: The Lease's leaseDurationSeconds, if known.
    lease_duration: Optional[float] = None
    #: The sidecar has read the Lease (or its absence) at least once.
    observed: bool = False
    #: The sidecar is shutting down or resigning.
    stepping_down: bool = False
    #: Set only on states a watch yields while the sidecar is unreachable.
    error: Optional[Exception] = None
    #: The ``validUntilBoottime`` of a leader answer exactly as the sidecar
    #: sent it, in integer nanoseconds (0 if it sent none): the deadline an
    #: acknowledgement of this answer names, never a local estimate.
    valid_until_boottime_ns: int = 0

    def remaining(self, now: Optional[float] = None) -> float:
        """Seconds of guaranteed leadership left at the :func:`boottime`
        reading ``now`` (default: now); 0 if not leader."""
        if not self.is_leader:
            return 0.0
        return max(0.0, self.valid_until - (boottime() if now is None else now))

    def field_manager(self) -> str:
        """The server-side-apply field manager for Kubernetes writes made
        under this leadership: the sidecar's holder identity ("" without
        one). Every sidecar process has an identity of its own, so every term
        has a manager of its own: take the fields over once at the start of
        the term (``force=True``), then apply every write without force, and
        if two pods believe they lead at once the one whose fields were taken
        over gets 409 Conflict naming the other's manager instead of silently
        overwriting its writes.

        The API server takes at most 128 printable characters: an identity
        that is longer, or has anything but printable ASCII, becomes its
        first 111 bytes (others replaced by ``_``), ``-`` and 16 hex digits
        of its 64-bit FNV-1a hash, so identities that differ only near the
        end still get different managers."""
        return field_manager(self.identity)

    def _key(self) -> tuple:
        return (self.is_leader, self.observed, self.stepping_down, self.identity,
                self.holder_identity, self.lease_uid, self.fencing_token)

    def _expired(self) -> "Leadership":
        return dataclasses.replace(self, is_leader=False, valid_for=0.0, valid_until=0.0,
                                   valid_until_boottime_ns=0)


_MAX_FIELD_MANAGER = 128  # the API server's limit


def field_manager(identity: str) -> str:
    """Leadership.field_manager() for a holder identity."""
    raw = identity.encode()
    if not raw or (len(raw) <= _MAX_FIELD_MANAGER and all(0x20 <= b <= 0x7E for b in raw)):
        return identity
    fnv = 0xCBF29CE484222325
    for b in raw:
        fnv = ((fnv ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    prefix = "".join(chr(b) if 0x20 <= b <= 0x7E else "_" for b in raw[:_MAX_FIELD_MANAGER - 17])
    return f"{prefix}-{fnv:016x}"


_RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


def _parse_time(value: Optional[str]) -> Optional[datetime.datetime]:
    if not value:
        return None
    m = _RFC3339.match(value) if isinstance(value, str) else None
    if not m:
        raise ValueError(f"not an RFC 3339 time: {value!r}")
    frac = (m.group(2) or "")[:6].ljust(6, "0")  # datetime holds microseconds
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.datetime.fromisoformat(f"{m.group(1)}.{frac}{zone}")


_DURATION = re.compile(r"^-?\d+(\.\d{1,9})?s$")


def _parse_duration(value: Optional[str]) -> Optional[float]:
    if value is None:
        return None
    if not isinstance(value, str) or not _DURATION.match(value):
        raise ValueError(f"not a proto3 JSON duration: {value!r}")
    return float(value[:-1])


def _duration_ns(value: Optional[str]) -> int:
    """A proto3 JSON duration (already checked by _parse_duration) in exact
    integer nanoseconds; 0 for None or a negative one."""
    if value is None or value.startswith("-"):
        return 0
    seconds, _, fraction = value[:-1].partition(".")
    return int(seconds) * 10**9 + int(fraction.ljust(9, "0"))


def format_duration_ns(ns: int) -> str:
    """Nanoseconds as a proto3 JSON duration (``"12345.678901234s"``), as
    GET /leader prints ``validUntilBoottime`` and POST /leader/ack takes it."""
    return f"{ns // 10**9}.{ns % 10**9:09d}s"


def _valid_until(is_leader: bool, valid_for: float, sidecar_deadline: Optional[float],
                 since: float) -> float:
    """The deadline of an answer on boottime(): the sidecar's own if it sent
    one, else ``since`` + ``valid_for``."""
    if not is_leader:
        return 0.0
    if sidecar_deadline and _SHARES_SIDECAR_CLOCK:
        return sidecar_deadline
    return since + valid_for


_INTEGER = re.compile(r"^-?\d+$")


def _field(obj: Mapping[str, Any], key: str, kind: type, bits: int = 0) -> Any:
    """``obj[key]`` checked against its proto3 JSON type: a bool, a str, or
    (``bits`` > 0) a signed integer as a JSON number or decimal string;
    None (null or absent) becomes the type's default. Raises ValueError."""
    value = obj.get(key)
    if value is None:
        return kind()
    if bits:
        if type(value) is int or (isinstance(value, str) and _INTEGER.match(value)):
            number = int(value)
            if -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
                return number
        raise ValueError(f"{key}: {value!r} is not a {bits}-bit integer")
    if type(value) is not kind:
        raise ValueError(f"{key}: {value!r} is not a {kind.__name__}")
    return value


def _revision(obj: Mapping[str, Any]) -> int:
    """The fencing revision of an answer: ``fencingRevisionDecimal`` when
    present and not empty (see parse_revision), else the int64
    ``fencingRevision`` that sidecars 0.2.0 and earlier send alone. Raises
    ValueError."""
    decimal = obj.get("fencingRevisionDecimal")
    if decimal is None or decimal == "":
        return _field(obj, "fencingRevision", int, bits=64)  # an int64: a JSON string
    return parse_revision("fencingRevisionDecimal", decimal)


def parse_json(text: Any, since: float) -> Leadership:
    """Parses a GET /leader body (str or bytes) with :func:`from_json`.
    Raises BatonError for anything but a JSON object whose fields have the
    types of baton.v1.Leadership."""
    try:
        obj = json.loads(text)
        if not isinstance(obj, dict):
            raise ValueError("not a JSON object")
        return from_json(obj, since)
    except ValueError as e:  # json.JSONDecodeError and UnicodeDecodeError too
        raise BatonError(f"malformed answer from the sidecar: {e}") from e


def from_json(obj: Mapping[str, Any], since: float) -> Leadership:
    """Converts the proto3 JSON of a Leadership (GET /leader); ``since`` is the
    :func:`boottime` its validity counts from if the sidecar sent no
    ``validUntilBoottime``. Unknown fields are ignored; raises ValueError for
    a field of the wrong type."""
    is_leader = _field(obj, "isLeader", bool)
    valid_for = (_parse_duration(obj.get("validFor")) or 0.0) if is_leader else 0.0
    deadline = _parse_duration(obj.get("validUntilBoottime"))
    return Leadership(
        is_leader=is_leader,
        identity=_field(obj, "identity", str),
        holder_identity=_field(obj, "holderIdentity", str),
        fencing_token=_field(obj, "fencingToken", int, bits=32),
        fencing_revision=_revision(obj),
        lease_name=_field(obj, "leaseName", str),
        lease_namespace=_field(obj, "leaseNamespace", str),
        lease_uid=_field(obj, "leaseUid", str),
        acquire_time=_parse_time(obj.get("acquireTime")),
        renew_time=_parse_time(obj.get("renewTime")),
        valid_for=valid_for,
        valid_until=_valid_until(is_leader, valid_for, deadline, since),
        lease_duration=_parse_duration(obj.get("leaseDuration")),
        observed=_field(obj, "observed", bool),
        stepping_down=_field(obj, "steppingDown", bool),
        valid_until_boottime_ns=_duration_ns(obj.get("validUntilBoottime")) if is_leader else 0,
    )


def from_proto(msg: Any, since: float) -> Leadership:
    """Converts a baton.v1.Leadership message; ``since`` as in from_json.
    Raises BatonError for a malformed ``fencing_revision_decimal``."""
    utc = datetime.timezone.utc
    try:  # the int64 field only from sidecars 0.2.0 and earlier, which leave this empty
        revision = (parse_revision("fencing_revision_decimal", msg.fencing_revision_decimal)
                    if msg.fencing_revision_decimal else msg.fencing_revision)
    except ValueError as e:
        raise BatonError(f"malformed answer from the sidecar: {e}") from e
    is_leader = msg.is_leader
    valid_for = msg.valid_for.ToTimedelta().total_seconds() if is_leader else 0.0
    return Leadership(
        is_leader=is_leader,
        identity=msg.identity,
        holder_identity=msg.holder_identity,
        fencing_token=msg.fencing_token,
        fencing_revision=revision,
        lease_name=msg.lease_name,
        lease_namespace=msg.lease_namespace,
        lease_uid=msg.lease_uid,
        acquire_time=msg.acquire_time.ToDatetime(utc) if msg.HasField("acquire_time") else None,
        renew_time=msg.renew_time.ToDatetime(utc) if msg.HasField("renew_time") else None,
        valid_for=valid_for,
        valid_until=_valid_until(is_leader, valid_for,
                                 msg.valid_until_boottime.ToNanoseconds() / 1e9, since),
        lease_duration=(msg.lease_duration.ToTimedelta().total_seconds()
                        if msg.HasField("lease_duration") else None),
        observed=msg.observed,
        stepping_down=msg.stepping_down,
        valid_until_boottime_ns=(max(msg.valid_until_boottime.ToNanoseconds(), 0)
                                 if is_leader else 0),
    )


class HeardDeadlines:
    """The latest deadline among the leader answers one client object has
    received in the latest term it heard of: what its acknowledgement of
    that term names. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._term: tuple = ("", 0)
        self._deadline_ns = 0

    def note(self, lead: Leadership) -> Leadership:
        """Records ``lead``'s deadline if it is a leader answer with one;
        returns ``lead``."""
        if lead.is_leader and lead.valid_until_boottime_ns > 0:
            term = (lead.identity, lead.fencing_token)
            with self._lock:
                if term != self._term:
                    self._term, self._deadline_ns = term, 0
                self._deadline_ns = max(self._deadline_ns, lead.valid_until_boottime_ns)
        return lead

    def up_to(self, fencing_token: int) -> int:
        """The latest deadline heard in term ``fencing_token``, in
        nanoseconds; 0 if none."""
        with self._lock:
            return self._deadline_ns if self._term[1] == fencing_token else 0


def require_leader_bound_ns(min_validity: float) -> int:
    """The promise ``require_leader(min_validity)`` asks the sidecar for, in
    nanoseconds: ``min_validity`` (none if negative) plus
    REQUIRE_LEADER_SLACK."""
    return round(max(min_validity, 0.0) * 1e9) + round(REQUIRE_LEADER_SLACK * 1e9)


def check_leader(lead: Leadership, min_validity: float, now: Optional[float] = None) -> int:
    """Returns ``lead``'s fencing token if it leads with at least
    ``min_validity`` seconds left at the :func:`boottime` reading ``now``
    (default: now); raises NotLeaderError otherwise."""
    remaining = lead.remaining(now)
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
        self._stall_at = boottime() + stall_timeout
        self._last: Optional[Leadership] = None

    def received(self, lead: Leadership) -> Optional[Leadership]:
        """Records a state; returns it if it is news (the first one, or a
        change other than times), else None."""
        self._stall_at = boottime() + self._stall_timeout
        news = self._last is None or lead._key() != self._last._key()
        self._last = lead
        return lead if news else None

    def timeout(self) -> float:
        """Seconds until :meth:`due` may have something to do: at most
        CLOCK_RECHECK while a guarantee runs."""
        now = boottime()
        wait = self._stall_at - now
        if self._last is not None and self._last.is_leader:
            wait = min(wait, self._last.valid_until - now, CLOCK_RECHECK)
        return max(0.0, wait)

    def due(self) -> Optional[Leadership]:
        """Returns the leader state turned follower when its guarantee ran
        out; raises StreamStalled when nothing arrived for too long."""
        now = boottime()
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
