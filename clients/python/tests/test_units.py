"""Tests that need no sidecar: fencing, addresses, parsing, the watch
bookkeeping, and errors when no sidecar answers."""

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

import baton_client
from baton_client import (Fence, HttpClient, Leadership, NotLeaderError,
                          SidecarUnavailableError, StaleTokenError)
from baton_client._address import resolve
from baton_client.leadership import (StreamStalled, WatchTracker, boottime, check_leader,
                                     from_json)
from conformance import passed

HERE = os.path.dirname(os.path.abspath(__file__))


def test_fence_admits_equal_and_higher_tokens_and_refuses_lower():
    fence = Fence()
    assert fence.highest is None
    for token in (3, 3, 5):
        fence.admit(token)
    with pytest.raises(StaleTokenError) as e:
        fence.admit(4)
    assert (e.value.token, e.value.highest) == (4, 5)
    assert fence.highest == 5
    assert Fence(highest=9).highest == 9


def test_revisions_are_fenced_as_integers_and_carried_in_their_own_header():
    fence = Fence()
    fence.admit(999)
    fence.admit(1000)  # compared as integers, not as strings
    with pytest.raises(StaleTokenError):
        fence.admit(0)  # "unknown" is refused once a revision was admitted
    fence.admit(2**64)  # revisions are integers of up to 128 bits
    assert fence.highest == 2**64
    headers = baton_client.revision_headers(2**128 - 1)
    assert headers == {baton_client.REVISION_HEADER: str(2**128 - 1)}
    assert baton_client.revision_from_headers(headers) == 2**128 - 1
    arabic_indic = "\u0664\u0667"  # digits to str.isdigit(), not ASCII
    for bad in (str(2**128), "04711", "-1", "+1", "47 ", arabic_indic):
        with pytest.raises(ValueError):
            baton_client.revision_from_headers({baton_client.REVISION_HEADER: bad})


def test_token_headers_round_trip_and_reject_garbage():
    headers = baton_client.token_headers(42)
    assert baton_client.token_from_headers({k.lower(): v for k, v in headers.items()}) == 42
    for bad in ({}, {baton_client.TOKEN_HEADER: "-1"}, {baton_client.TOKEN_HEADER: "x"},
                {baton_client.TOKEN_HEADER: str(2**31)}):
        with pytest.raises(ValueError):
            baton_client.token_from_headers(bad)


@pytest.mark.parametrize("env,want", [
    ("", "127.0.0.1:4041"), (":5041", "127.0.0.1:5041"), ("10.0.0.1:7", "10.0.0.1:7"),
    ("[::1]:4041", "[::1]:4041"), ("unix:/run/baton.sock", "unix:/run/baton.sock"),
])
def test_grpc_address_comes_from_the_environment(monkeypatch, env, want):
    monkeypatch.setenv("BATON_GRPC_ADDR", env)
    assert resolve(None, "BATON_GRPC_ADDR", "127.0.0.1:4041", allow_unix=True) == want


@pytest.mark.parametrize("bad", ["4040", "localhost", "127.0.0.1:", "unix:/x"])
def test_bad_http_address_names_the_variable(monkeypatch, bad):
    monkeypatch.setenv("BATON_HTTP_ADDR", bad)
    with pytest.raises(ValueError, match="BATON_HTTP_ADDR"):
        HttpClient()


def test_leadership_parses_proto3_json():
    lead = from_json({"isLeader": True, "identity": "a", "holderIdentity": "a",
                      "fencingToken": 4, "acquireTime": "2026-09-17T13:37:24.807518123Z",
                      "validFor": "1.250s", "leaseDuration": "2s", "observed": True}, since=100.0)
    assert lead.is_leader and lead.fencing_token == 4 and lead.valid_until == 101.25
    assert lead.acquire_time.microsecond == 807518 and lead.lease_duration == 2.0
    follower = from_json({"isLeader": False, "validFor": "0s"}, since=100.0)
    assert follower.remaining() == 0 and follower.renew_time is None


def test_require_leader_needs_the_validity_asked_for():
    now = boottime()
    lead = Leadership(is_leader=True, identity="a", holder_identity="a", fencing_token=3,
                      observed=True, valid_for=1.0, valid_until=now + 1.0)
    assert check_leader(lead, 0.5) == 3
    with pytest.raises(NotLeaderError, match="only"):
        check_leader(lead, 5.0)
    with pytest.raises(NotLeaderError, match="held by b"):
        check_leader(Leadership(identity="a", holder_identity="b", observed=True), 0)


def test_watch_tracker_turns_a_silent_leader_into_a_follower_then_reports_a_stall():
    tracker = WatchTracker(stall_timeout=0.3)
    lead = Leadership(is_leader=True, identity="a", fencing_token=1,
                      valid_until=boottime() + 0.1)
    assert tracker.received(lead) is lead
    assert tracker.received(lead) is None  # a heartbeat is not news
    time.sleep(tracker.timeout())
    expired = tracker.due()
    assert expired is not None and not expired.is_leader and expired.fencing_token == 1
    time.sleep(tracker.timeout())
    with pytest.raises(StreamStalled):
        tracker.due()


def closed_addr():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_absent_sidecar_fails_fast_with_a_clear_error():
    addr = closed_addr()
    http = HttpClient(addr)
    start = time.monotonic()
    with pytest.raises(SidecarUnavailableError, match="BATON_HTTP_ADDR"):
        http.is_leader()
    from baton_client import Client
    with Client(addr) as client:
        with pytest.raises(SidecarUnavailableError, match=addr):
            client.leadership()
        with pytest.raises(SidecarUnavailableError):
            client.is_leader()
        with pytest.raises(SidecarUnavailableError, match=addr):
            client.require_leader()  # not NotLeaderError: nobody answered
    assert time.monotonic() - start < 2
    passed("absent-sidecar")


def test_sync_watch_reports_an_absent_sidecar_and_keeps_retrying():
    from baton_client import Client
    stop = threading.Event()
    with Client(closed_addr(), min_backoff=0.01, max_backoff=0.02) as client:
        errors = 0
        for state in client.watch(stop):
            assert isinstance(state.error, SidecarUnavailableError) and not state.is_leader
            errors += 1
            if errors == 3:
                break
        with pytest.raises(TimeoutError):
            client.wait_until_leader(timeout=0.3)


def test_http_only_use_needs_no_grpc():
    code = ("import sys; sys.modules['grpc'] = None; import baton_client; "
            "baton_client.HttpClient(); baton_client.Fence()")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_committed_stubs_are_up_to_date():
    pytest.importorskip("grpc_tools")
    sys.path.insert(0, os.path.join(HERE, ".."))
    import generate
    with tempfile.TemporaryDirectory() as out:
        generate.generate(out)
        for name in sorted(os.listdir(os.path.join(out, "baton_client", "v1"))):
            with open(os.path.join(out, "baton_client", "v1", name)) as f:
                want = f.read()
            with open(os.path.join(HERE, "..", "src", "baton_client", "v1", name)) as f:
                assert f.read() == want, f"src/baton_client/v1/{name} is stale: run generate.py"
