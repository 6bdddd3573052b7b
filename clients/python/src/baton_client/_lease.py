"""The Lease a client expects its sidecar to serve: from the client's
arguments, else $BATON_LEASE_NAME and $BATON_LEASE_NAMESPACE; and the check
that refuses answers about another Lease."""

from __future__ import annotations

import dataclasses
import os
from typing import Optional

from .errors import WrongLeaseError
from .leadership import Leadership

ENV_LEASE_NAME = "BATON_LEASE_NAME"
ENV_LEASE_NAMESPACE = "BATON_LEASE_NAMESPACE"


@dataclasses.dataclass(frozen=True)
class LeaseRef:
    """A Lease's name and namespace; an empty namespace in an expected
    Lease matches any."""

    name: str
    namespace: str = ""

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    def matches(self, served: "LeaseRef") -> bool:
        """Whether a sidecar serving ``served`` serves this Lease."""
        return self.name == served.name and self.namespace in ("", served.namespace)


def expected_lease(name: Optional[str], namespace: Optional[str]) -> Optional[LeaseRef]:
    """The Lease a client with these arguments expects: ``name`` (and
    ``namespace``) if given, else ``$BATON_LEASE_NAME`` (and
    ``$BATON_LEASE_NAMESPACE``), else None (any Lease). Raises ValueError for
    a namespace without a name."""
    if not name and not namespace:
        name = os.environ.get(ENV_LEASE_NAME, "")
        namespace = os.environ.get(ENV_LEASE_NAMESPACE, "")
    if not name and not namespace:
        return None
    if not name:
        raise ValueError(f"the expected Lease (lease_name or ${ENV_LEASE_NAME}) needs a name")
    return LeaseRef(name, namespace or "")


def check_lease(lead: Leadership, expected: Optional[LeaseRef], addr: str) -> Leadership:
    """Returns ``lead`` if it comes from a sidecar serving ``expected`` (or
    nothing is expected); raises WrongLeaseError otherwise."""
    served = LeaseRef(lead.lease_name, lead.lease_namespace)
    if expected is not None and not expected.matches(served):
        raise WrongLeaseError(addr, str(expected), str(served))
    return lead
