"""Fencing: the store side (Fence) and how a write carries its token.

The pattern:

1. Right before each write, the writer calls ``require_leader(d)`` with ``d``
   the seconds the write needs; it raises NotLeaderError on a follower.
2. The writer sends the token with the write: a field of the request, or the
   ``Baton-Fencing-Token`` HTTP header (:func:`token_headers`).
3. The store keeps the highest token it has admitted and refuses a lower one,
   atomically with the write (:class:`Fence`).

Step 3 is what makes it safe: a deposed leader may not know yet that it was
deposed, and its write may already be on its way.

Two tokens, one per store (never mix them in one Fence):

* ``Leadership.fencing_token`` (the Lease's leaseTransitions) grows across
  leaders as far as any running sidecar has seen; if the Lease is deleted
  while every sidecar restarts, it starts again from 0.
* ``Leadership.fencing_revision`` (the resourceVersion of the write that won
  the term) keeps growing even then, because it comes from the API server's
  own counter; that is guaranteed on Kubernetes >= 1.35 only (KEP-5504:
  resourceVersions of one resource type are comparable integers). It is an
  ``int`` of up to 128 bits (0 .. 2**128-1), so compare it as an integer,
  never as text. Send it with :func:`revision_headers`. 0 means the sidecar
  did not know one; a Fence refuses it once any revision was admitted.
"""

from __future__ import annotations

import re
import threading
from typing import Dict, Mapping, Optional

from .errors import StaleTokenError

#: The HTTP headers that carry a fencing token or revision with a write.
TOKEN_HEADER = "Baton-Fencing-Token"
REVISION_HEADER = "Baton-Fencing-Revision"


def token_headers(token: int) -> Dict[str, str]:
    """The headers that tag an HTTP write with ``token``."""
    return {TOKEN_HEADER: str(int(token))}


def revision_headers(revision: int) -> Dict[str, str]:
    """The headers that tag an HTTP write with a fencing ``revision`` (an
    integer of up to 128 bits), in decimal digits."""
    return {REVISION_HEADER: str(int(revision))}


#: The largest fencing revision: a resourceVersion is an integer of up to
#: 128 bits (KEP-5504).
MAX_REVISION = 2**128 - 1

_REVISION = re.compile(r"0|[1-9][0-9]{0,38}")  # 2**128-1 has 39 digits


def parse_revision(name: str, value: object) -> int:
    """The fencing revision ``value`` spells: decimal ASCII digits, no sign,
    no leading zero (but "0"), at most MAX_REVISION. Raises ValueError,
    naming the field or header ``name``, for anything else. Both the answer
    readers (``fencingRevisionDecimal``) and :func:`revision_from_headers`
    use it."""
    if not isinstance(value, str) or not _REVISION.fullmatch(value) or int(value) > MAX_REVISION:
        raise ValueError(f"{name}: {value!r} is not a fencing revision (decimal digits "
                         f"of at most 2**128-1, without sign or leading zero)")
    return int(value)


def _header(headers: Mapping[str, str], name: str) -> str:
    """The value of header ``name`` (compared case-insensitively); raises
    ValueError if it is missing."""
    value = next((v for k, v in headers.items() if k.lower() == name.lower()), None)
    if value is None:
        raise ValueError(f"missing {name} header")
    return value


def token_from_headers(headers: Mapping[str, str]) -> int:
    """Reads the token :func:`token_headers` wrote (header names compared
    case-insensitively). Raises ValueError if it is missing or not a
    non-negative 32-bit integer."""
    value = _header(headers, TOKEN_HEADER)
    if not value.isdigit() or int(value) > 2**31 - 1:
        raise ValueError(f"{TOKEN_HEADER} {value!r} is not a fencing token")
    return int(value)


def revision_from_headers(headers: Mapping[str, str]) -> int:
    """Reads the revision :func:`revision_headers` wrote. Raises ValueError
    if it is missing or not a fencing revision (see :func:`parse_revision`)."""
    return parse_revision(REVISION_HEADER, _header(headers, REVISION_HEADER))


class Fence:
    """The store side of fencing for one Lease: remembers the highest token
    (or revision, an integer of up to 128 bits: compared as integers the
    same way) admitted and refuses lower ones; equal ones are admitted (the
    same leader writing again). Thread-safe.

    :meth:`admit` must be atomic with the write it guards: hold the store's
    own lock or transaction across both. A store that persists its data
    should persist :attr:`highest` with it and pass it back as ``highest``
    after a restart.
    """

    def __init__(self, highest: Optional[int] = None) -> None:
        self._lock = threading.Lock()
        self._highest = highest

    def admit(self, token: int) -> None:
        """Records ``token``, or raises StaleTokenError (recording nothing) if
        a higher one was admitted before."""
        with self._lock:
            if self._highest is not None and token < self._highest:
                raise StaleTokenError(token, self._highest)
            self._highest = token

    @property
    def highest(self) -> Optional[int]:
        """The highest admitted token; None before the first."""
        with self._lock:
            return self._highest
