"""baton_client.pgfence against a real PostgreSQL: a throwaway cluster that
clients/testing/postgres starts in a directory of the session's own and
removes at the end. Skipped when psycopg or the PostgreSQL binaries are
missing."""

import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from typing import Iterator, List, Tuple

import pytest

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (the [postgres] extra)")

from baton_client import Leadership, StaleTokenError, pgfence  # noqa: E402
from baton_client.pgfence import Fence, NoRevisionError, StaleFenceError, Term  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "testing", "postgres")
_seq = itertools.count(1)


@pytest.fixture(scope="session")
def dsn() -> Iterator[str]:
    # Not pytest's tmp_path: run as root, the server runs as nobody, which
    # must be able to reach the directory.
    d = tempfile.mkdtemp(prefix="baton-pgfence-")
    try:
        r = subprocess.run([SCRIPT, "start", d], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode == 77:
            pytest.skip(r.stdout.strip())
        assert r.returncode == 0, f"clients/testing/postgres start: {r.stdout}"
        try:
            with open(os.path.join(d, "postgres.json")) as f:
                yield json.load(f)["dsn"]
        finally:
            subprocess.run([SCRIPT, "stop", d])
    finally:
        shutil.rmtree(d, ignore_errors=True)


def connect(dsn: str) -> "psycopg.Connection":
    return psycopg.connect(dsn, autocommit=True)


@pytest.fixture
def db(dsn: str) -> Iterator[Tuple["psycopg.Connection", str, str]]:
    """A connection, a new fence table and a new data table (key, value)."""
    n = next(_seq)
    with connect(dsn) as conn:
        conn.execute(f"CREATE TABLE data_{n} (key text PRIMARY KEY, value text NOT NULL)")
        yield conn, f"fence_{n}", f"data_{n}"


def fence_of(conn: "psycopg.Connection", table: str, order: str = "revision") -> Fence:
    fence = Fence(table, order=order)
    fence.ensure_schema(conn)
    return fence


def put(conn, fence: Fence, data: str, key: str, value: str, term: Term) -> None:
    fence.write(conn, key, term, lambda c: c.execute(
        f"INSERT INTO {data} VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value)))


def value(conn, data: str, key: str) -> str:
    return conn.execute(f"SELECT value FROM {data} WHERE key = %s", (key,)).fetchone()[0]


def test_importing_baton_client_needs_no_psycopg() -> None:
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "import baton_client, baton_client.http, baton_client.fence\n"
            "try:\n    import baton_client.pgfence\nexcept ImportError:\n    pass\n"
            "else:\n    sys.exit('baton_client.pgfence imported without psycopg')\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_newer_revision_is_admitted_and_its_write_lands(db) -> None:
    conn, table, data = db
    fence = fence_of(conn, table)
    put(conn, fence, data, "k", "first", Term(revision=100, token=3))
    put(conn, fence, data, "k", "second", Term(revision=250, token=4))
    assert value(conn, data, "k") == "second"
    assert fence.highest(conn, "k") == Term(250, 4)


def test_older_revision_is_refused_and_its_write_does_not_land(db) -> None:
    conn, table, data = db
    fence = fence_of(conn, table)
    put(conn, fence, data, "k", "newer", Term(250, 4))
    called = []
    with pytest.raises(StaleFenceError) as e:
        fence.write(conn, "k", Term(100, 3), called.append)
    assert not called, "the refused term's write function was called"
    assert (e.value.key, e.value.term, e.value.highest_term) == ("k", Term(100, 3), Term(250, 4))
    with pytest.raises(StaleTokenError) as e:  # the type the in-memory Fence raises
        put(conn, fence, data, "k", "older", Term(100, 3))
    assert (e.value.token, e.value.highest) == (100, 250)
    assert value(conn, data, "k") == "newer"
    assert fence.highest(conn, "k") == Term(250, 4)


def test_equal_revision_is_admitted(db) -> None:
    conn, table, data = db
    fence = fence_of(conn, table)
    for i in range(3):
        put(conn, fence, data, "k", f"write {i}", Term(42, 1))
    assert value(conn, data, "k") == "write 2"


def test_revisions_beyond_64_bits_compare_as_integers(db) -> None:
    conn, table, data = db
    fence = fence_of(conn, table)
    max128 = 2**128 - 1
    steps = [(9, False), (10, False), (2**63, False), (2**64, False),
             (2**63 + 1, True), (2**64 - 1, True), (2**64, False), (max128, False),
             (max128 - 1, True)]
    for i, (revision, stale) in enumerate(steps):
        if stale:
            with pytest.raises(StaleFenceError):
                put(conn, fence, data, "k", str(revision), Term(revision, i))
        else:
            put(conn, fence, data, "k", str(revision), Term(revision, i))
    assert value(conn, data, "k") == str(max128)
    assert fence.highest(conn, "k").revision == max128
    with pytest.raises(ValueError):
        put(conn, fence, data, "k", "too big", Term(2**128, 99))


def test_recreated_lease_new_leader_is_admitted_by_the_default_fence(db) -> None:
    """A member with no history recreates a deleted Lease: leaseTransitions
    starts again at 0, the revision keeps growing."""
    conn, table, data = db
    before, after = Term(revision=8000, token=5), Term(revision=9100, token=0)
    fence = fence_of(conn, table)  # the default order
    put(conn, fence, data, "k", "before", before)
    put(conn, fence, data, "k", "after", after)
    assert value(conn, data, "k") == "after"
    with pytest.raises(StaleFenceError):  # the old Lease's deposed leader, late
        put(conn, fence, data, "k", "late", before)

    by_token = fence_of(conn, table + "_token", order="token")
    put(conn, by_token, data, "t", "before", before)
    with pytest.raises(StaleFenceError) as e:
        put(conn, by_token, data, "t", "after", after)
    assert (e.value.token, e.value.highest) == (0, 5)


def test_order_by_token_compares_tokens(db) -> None:
    conn, table, data = db
    fence = fence_of(conn, table, order="token")
    put(conn, fence, data, "k", "3", Term(900, 3))
    put(conn, fence, data, "k", "4", Term(100, 4))
    put(conn, fence, data, "k", "4 again", Term(0, 4))
    with pytest.raises(StaleFenceError):
        put(conn, fence, data, "k", "2", Term(5000, 2))
    assert value(conn, data, "k") == "4 again"


def test_terms_without_an_orderable_revision_are_refused(db) -> None:
    conn, table, data = db
    fence = fence_of(conn, table)
    with pytest.raises(NoRevisionError):
        put(conn, fence, data, "k", "x", Term(0, 7))
    for bad in (Term(-1, 1), Term(1, -1), Term(1, 2**31), Term(True, 1), Term("12", 1)):
        with pytest.raises(ValueError):
            put(conn, fence, data, "k", "x", bad)
    assert fence.highest(conn, "k") is None


def test_term_of_a_leader_answer() -> None:
    lead = Leadership(is_leader=True, fencing_token=4, fencing_revision=123456)
    assert Term.of(lead) == Term(revision=123456, token=4)


def test_a_failed_write_leaves_the_fence_as_it_was(db) -> None:
    conn, table, data = db
    fence = fence_of(conn, table)
    put(conn, fence, data, "k", "v", Term(10, 1))

    def boom(_conn) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        fence.write(conn, "k", Term(20, 2), boom)
    assert fence.highest(conn, "k") == Term(10, 1)
    put(conn, fence, data, "k", "v", Term(15, 2))


def test_write_commits_on_a_connection_outside_autocommit(dsn: str, db) -> None:
    conn, table, data = db
    fence = fence_of(conn, table)
    with psycopg.connect(dsn) as plain:  # autocommit off: psycopg's default
        put(plain, fence, data, "k", "v", Term(10, 1))
        assert plain.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert value(conn, data, "k") == "v"  # seen from another connection: committed


def test_ensure_schema_from_many_replicas_at_once(dsn: str) -> None:
    fence = Fence(f"fence_race_{next(_seq)}")
    errors: List[BaseException] = []

    def replica() -> None:
        try:
            with connect(dsn) as conn:
                fence.ensure_schema(conn)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=replica) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def wait_blocked_on_lock(conn, pid: int) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        row = conn.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                           (pid,)).fetchone()
        if row and row[0] == "Lock":
            return
        time.sleep(0.005)
    raise AssertionError(f"backend {pid} never waited for the fence row's lock")


def test_overlapping_older_writer_waits_and_is_refused(dsn: str, db) -> None:
    """The newer term admits first and holds its transaction open; the older
    term's writer, which started while the fence still held an older term,
    must wait and then be refused (a SELECT-then-UPDATE would admit it)."""
    conn, table, data = db
    fence = fence_of(conn, table)
    put(conn, fence, data, "k", "first", Term(100, 1))
    newer, older = Term(300, 3), Term(200, 2)
    result: List[BaseException] = []
    with connect(dsn) as new_conn, connect(dsn) as old_conn:
        with new_conn.transaction():
            fence.admit(new_conn, "k", newer)

            def older_writer() -> None:
                try:
                    put(old_conn, fence, data, "k", "older", older)
                except BaseException as e:  # noqa: BLE001 - checked below
                    result.append(e)
                else:
                    result.append(AssertionError("the older term was admitted"))

            t = threading.Thread(target=older_writer)
            t.start()
            wait_blocked_on_lock(conn, old_conn.info.backend_pid)
            new_conn.execute(f"UPDATE {data} SET value = 'newer' WHERE key = 'k'")
        t.join(10)
    assert len(result) == 1 and isinstance(result[0], StaleFenceError), result
    assert result[0].highest_term == newer
    assert value(conn, data, "k") == "newer"


def test_racing_writers_commit_in_term_order(dsn: str, db) -> None:
    """Writers of many terms race on one key; each admitted write appends its
    revision to a log in the same transaction. In commit order the log never
    goes back to an older term, and every refusal names a newer term."""
    conn, table, _ = db
    fence = fence_of(conn, table)
    log = f"race_log_{next(_seq)}"
    conn.execute(f"CREATE TABLE {log} (seq bigserial PRIMARY KEY, revision numeric NOT NULL)")
    admitted, refused, problems = [], [], []
    lock = threading.Lock()

    def writer(w: int) -> None:
        rng = random.Random(w)
        with connect(dsn) as c:
            for i in range(30):
                rev = 1 + 2 * i + rng.randrange(12)
                try:
                    fence.write(c, "k", Term(rev, rev), lambda c, rev=rev: (
                        c.execute("SELECT pg_sleep(0.001)"),
                        c.execute(f"INSERT INTO {log} (revision) VALUES (%s)", (rev,))))
                    with lock:
                        admitted.append(rev)
                except StaleFenceError as e:
                    with lock:
                        refused.append(rev)
                        if e.highest_term.revision <= rev:
                            problems.append(f"{rev} refused in favour of {e.highest_term}")
                except Exception as e:  # noqa: BLE001 - reported below
                    with lock:
                        problems.append(repr(e))
                    return

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not problems
    revs = [int(r) for (r,) in conn.execute(f"SELECT revision FROM {log} ORDER BY seq")]
    assert len(revs) == len(admitted)
    assert all(a <= b for a, b in zip(revs, revs[1:])), f"out of order: {revs}"
    assert len(admitted) >= 2 and refused, (len(admitted), len(refused))


def test_module_names() -> None:
    assert pgfence.DEFAULT_TABLE == "baton_fence"
    with pytest.raises(ValueError):
        Fence(order="leaseTransitions")
