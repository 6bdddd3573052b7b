"""Fenced writes into PostgreSQL: a write lands only if no write of a newer
term was accepted for the same key before it, and the check and the write
commit together. Needs psycopg 3: ``pip install "baton-client[postgres]"``
(``import baton_client`` alone never imports it).

The store keeps one row per fenced key in a fence table
(:meth:`Fence.ensure_schema` creates it)::

    CREATE TABLE baton_fence (
      key        text PRIMARY KEY,
      revision   numeric(39, 0) NOT NULL CHECK (revision >= 0),
      token      integer NOT NULL CHECK (token >= 0),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

:meth:`Fence.admit` runs one statement inside the writer's transaction::

    INSERT INTO baton_fence AS f (key, revision, token) VALUES (%s, %s, %s)
    ON CONFLICT (key) DO UPDATE
      SET revision = excluded.revision, token = excluded.token, updated_at = now()
      WHERE f.revision <= excluded.revision
    RETURNING f.revision

A row back means the term is admitted, and PostgreSQL holds the fence row's
lock until the transaction ends, so a writer of another term waits and then
compares with what this one committed: there is no window between the check
and the write. No row means a newer term was accepted: it raises
:class:`StaleFenceError` and the transaction is rolled back.
:meth:`Fence.write` does all of it around the caller's write::

    from baton_client import pgfence

    fence = pgfence.Fence()
    fence.ensure_schema(conn)
    term = pgfence.Term.of(leadership)  # the answer that said this pod leads
    fence.write(conn, "orders", term,
                lambda conn: conn.execute("UPDATE orders SET ... WHERE ..."))

Which order (docs/fencing.md): the fencing revision, the resourceVersion of
the write that won the term, keeps growing across leaders even when the
Lease is deleted and recreated by a member with no history (its
leaseTransitions, the fencing token, start again at 0). It is comparable on
Kubernetes 1.35 or later (KEP-5504) and is the default, ``order="revision"``;
the token is stored beside it. On older servers use ``order="token"``. One
order per table. A revision is an ``int`` of up to 128 bits (KEP-5504);
psycopg sends it whole, and ``numeric(39, 0)`` holds and compares every one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, NamedTuple, Optional, Sequence, TypeVar, Union

import psycopg
from psycopg import sql

from .errors import BatonError, StaleTokenError
from .fence import MAX_REVISION

if TYPE_CHECKING:
    from .leadership import Leadership

__all__ = ["DEFAULT_TABLE", "Fence", "NoRevisionError", "StaleFenceError", "Term"]

#: The fence table's name unless Fence is given another.
DEFAULT_TABLE = "baton_fence"

_MAX_TOKEN = 2**31 - 1

T = TypeVar("T")


class Term(NamedTuple):
    """What a leader tags its writes with."""

    #: The fencing revision (``Leadership.fencing_revision``), an integer of
    #: up to 128 bits.
    revision: int
    #: The fencing token (``Leadership.fencing_token``).
    token: int

    @classmethod
    def of(cls, leadership: "Leadership") -> "Term":
        """The term of a leader answer. Take it from the answer that said
        this pod leads, right before the write."""
        return cls(leadership.fencing_revision, leadership.fencing_token)


class StaleFenceError(StaleTokenError):
    """The fence refused a write whose term is older than one it already
    accepted for ``key``: the writer is a deposed leader, and its write did
    not land.

    Attributes:
        key: the fenced key.
        order: ``"revision"`` or ``"token"``, what was compared.
        term: the refused :class:`Term`; ``highest``: the fence's, as a
            :class:`Term` in ``highest_term``.
        token, highest: the compared values (revisions when ordered by
            revision), as :class:`StaleTokenError` has them.
    """

    def __init__(self, key: str, order: str, term: Term, highest_term: Term) -> None:
        self.key = key
        self.order = order
        self.term = term
        self.highest_term = highest_term
        self.token = getattr(term, order)
        self.highest = getattr(highest_term, order)
        BatonError.__init__(
            self,
            f"stale write to {key!r} refused (by {order}): term (revision {term.revision}, "
            f"token {term.token}); a write of term (revision {highest_term.revision}, "
            f"token {highest_term.token}) was already accepted")


class NoRevisionError(BatonError, ValueError):
    """A fence ordered by revision was given a term without one (revision
    0): the sidecar did not know it (an older sidecar, or a resourceVersion
    that is not an integer). Writing with it would be fenced by nothing;
    use ``order="token"`` on such a cluster."""


_SCHEMA = """CREATE TABLE IF NOT EXISTS {table} (
  key        text PRIMARY KEY,
  revision   numeric(39, 0) NOT NULL CHECK (revision >= 0),
  token      integer NOT NULL CHECK (token >= 0),
  updated_at timestamptz NOT NULL DEFAULT now()
)"""

_ADMIT = """INSERT INTO {table} AS f (key, revision, token) VALUES (%s, %s, %s)
ON CONFLICT (key) DO UPDATE
  SET revision = excluded.revision, token = excluded.token, updated_at = now()
  WHERE f.{col} <= excluded.{col}
RETURNING f.revision"""

_HIGHEST = "SELECT revision, token FROM {table} WHERE key = %s"


class Fence:
    """Fences writes through one fence table. Holds no connection and no
    state: one Fence may serve every thread.

    Args:
        table: the fence table's name, or its qualified name as a sequence
            (``("myschema", "fence")``).
        order: ``"revision"`` (default) or ``"token"``, what the fence
            compares.
    """

    def __init__(self, table: Union[str, Sequence[str]] = DEFAULT_TABLE,
                 order: str = "revision") -> None:
        if order not in ("revision", "token"):
            raise ValueError(f"order {order!r}: want 'revision' or 'token'")
        self.order = order
        parts = (table,) if isinstance(table, str) else tuple(table)
        self._name = ".".join(parts)
        self._table = sql.Identifier(*parts)

    def ensure_schema(self, conn: psycopg.Connection) -> None:
        """Creates the fence table unless it exists, and commits. Safe to
        call from every replica at start-up at once: the creation is
        serialized by a transaction-scoped advisory lock (CREATE TABLE IF
        NOT EXISTS alone is not safe to race)."""
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (self._name,))
            conn.execute(sql.SQL(_SCHEMA).format(table=self._table))

    def admit(self, conn: psycopg.Connection, key: str, term: Term) -> None:
        """Records ``term`` as the newest for ``key`` in the connection's
        current transaction, or raises :class:`StaleFenceError` when the
        fence holds a newer term (nothing was recorded; roll back). An equal
        term is admitted: the same leader writing again. On success the
        transaction holds the fence row's lock until it ends: do the write in
        it, then commit.

        Under REPEATABLE READ or SERIALIZABLE, a term another transaction
        admitted concurrently raises psycopg's SerializationFailure: retry
        the whole transaction, which compares again. Raises
        :class:`NoRevisionError` or ValueError for a term that cannot be
        compared."""
        self._check(term)
        row = conn.execute(
            sql.SQL(_ADMIT).format(table=self._table, col=sql.Identifier(self.order)),
            (key, term.revision, term.token)).fetchone()
        if row is not None:
            return
        highest = self.highest(conn, key)
        if highest is None:  # cannot happen: the row that refused us is there
            raise BatonError(f"term {term} for {key!r} refused, and no fence row")
        raise StaleFenceError(key, self.order, term, highest)

    def write(self, conn: psycopg.Connection, key: str, term: Term,
              write: Callable[[psycopg.Connection], T]) -> T:
        """Runs ``write(conn)`` in a transaction that first admits ``term``
        for ``key``, and commits both together; returns what ``write``
        returned. Raises :class:`StaleFenceError` without calling ``write``
        when the fence holds a newer term; nothing changes. An exception
        from ``write`` rolls everything back and propagates.

        On a connection already inside a transaction the block is a
        savepoint, and the fence row stays locked until that transaction
        ends: committing it is then the caller's."""
        with conn.transaction():
            self.admit(conn, key, term)
            return write(conn)

    def highest(self, conn: psycopg.Connection, key: str) -> Optional[Term]:
        """The term the fence holds for ``key``; None before the first
        admitted write."""
        row = conn.execute(sql.SQL(_HIGHEST).format(table=self._table), (key,)).fetchone()
        return None if row is None else Term(int(row[0]), int(row[1]))

    def _check(self, term: Term) -> None:
        revision, token = term
        for name, v, top in (("revision", revision, MAX_REVISION), ("token", token, _MAX_TOKEN)):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= top:
                raise ValueError(f"fencing {name} {v!r} is not an integer in [0, {top}]")
        if self.order == "revision" and revision == 0:
            raise NoRevisionError(
                "the term has no fencing revision (0); fence with order='token' where the "
                "sidecar reports none")
