"""The exceptions of baton_client. Every one derives from BatonError."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .leadership import Leadership


class BatonError(Exception):
    """Base of every error baton_client raises."""


class SidecarUnavailableError(BatonError):
    """No baton sidecar answered at ``addr``. Act as a follower; the clients
    reconnect by themselves when the sidecar is back."""

    def __init__(self, addr: str, cause: object, env_var: str) -> None:
        self.addr = addr
        self.cause = cause
        super().__init__(
            f"no baton sidecar answering at {addr} (is the baton container running, "
            f"and is ${env_var} right?): {cause}")


class WrongLeaseError(BatonError):
    """The sidecar at ``addr`` serves the Lease ``served``, not the Lease
    ``expected`` this client was told to expect (``lease_name`` /
    ``$BATON_LEASE_NAME``): its answers are about another workload's
    leadership and were refused. Act as a follower, and fix the address or
    the expected Lease. Leases are written ``namespace/name``."""

    def __init__(self, addr: str, expected: str, served: str) -> None:
        self.addr = addr
        self.expected = expected
        self.served = served
        super().__init__(
            f"the baton sidecar at {addr} serves Lease {served}, not the expected {expected}")


class NotLeaderError(BatonError):
    """This pod must not write: it does not lead, or not with the validity
    that was asked for.

    Attributes:
        leadership: the state the decision was made on.
        min_validity: the remaining validity asked for, in seconds.
        remaining: the validity that was left, in seconds (0 if not leader).
    """

    def __init__(self, leadership: "Leadership", min_validity: float, remaining: float) -> None:
        self.leadership = leadership
        self.min_validity = min_validity
        self.remaining = remaining
        super().__init__(self._reason())

    def _reason(self) -> str:
        lead = self.leadership
        if lead.is_leader:
            return (f"leader, but only {self.remaining:.3f}s of guaranteed leadership left "
                    f"({self.min_validity:g}s needed)")
        if not lead.observed:
            return "not leader: the sidecar has not read the Lease yet"
        if lead.stepping_down:
            return "not leader: the sidecar is stepping down"
        if not lead.holder_identity:
            return "not leader: the Lease has no holder"
        if lead.holder_identity == lead.identity:
            return "not leader: the renew deadline passed"
        return f"not leader: the Lease is held by {lead.holder_identity}"


class StaleTokenError(BatonError):
    """A store's Fence refused a write: a higher token (or fencing revision,
    an integer of up to 128 bits) was admitted before, so the writer is a
    deposed leader."""

    def __init__(self, token: int, highest: int) -> None:
        self.token = token
        self.highest = highest
        super().__init__(
            f"stale fencing token {token}: a write with token {highest} was already accepted")
