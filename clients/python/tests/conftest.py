"""The shared sidecar fixture (clients/testing/sidecars): tests that take
``settled`` run against the real sidecars named by $BATON_SIDECARS, and are
skipped without it."""

import json
import os
import signal
import time
from typing import Any, Dict, Tuple

import pytest

from baton_client import BatonError, HttpClient


def read_fixture() -> Dict[str, Any]:
    with open(os.environ["BATON_SIDECARS"]) as f:
        return json.load(f)


def send(sidecar: Dict[str, Any], sig: signal.Signals) -> None:
    assert sidecar["pid"], f"sidecar {sidecar['index']} is not running"
    os.kill(sidecar["pid"], sig)


def wait_stopped(sidecar: Dict[str, Any]) -> None:
    """Waits until a SIGSTOP sent to the sidecar has taken effect (kill
    returns before the process is stopped, and it may answer meanwhile)."""
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        with open(f"/proc/{sidecar['pid']}/stat") as f:
            # The state follows the command name in parentheses: "T" is stopped.
            if f.read().rpartition(") ")[2].startswith("T"):
                return
        time.sleep(0.001)
    raise AssertionError(f"sidecar {sidecar['index']} did not stop within 2s")


def wait_settled(timeout: float = 20.0) -> Tuple[Dict[str, Any], int]:
    """Waits until every sidecar runs, has read the Lease and answers, and
    exactly one leads;
    returns the fixture and the leader's index."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        fx = read_fixture()
        try:
            states = [HttpClient(s["http"], timeout=0.5).leadership() for s in fx["sidecars"]]
            if all(st.identity == s["identity"] and st.observed
                   for st, s in zip(states, fx["sidecars"])):
                leaders = [i for i, st in enumerate(states) if st.is_leader]
                if len(leaders) == 1:
                    return fx, leaders[0]
                last = f"leaders: {leaders}"
            else:
                last = "a sidecar is restarting (or has not read the Lease yet)"
        except (BatonError, TypeError) as e:
            last = str(e)
        time.sleep(0.1)
    raise AssertionError(f"sidecars did not settle in {timeout}s: {last}")


@pytest.fixture
def settled() -> Tuple[Dict[str, Any], int]:
    if not os.environ.get("BATON_SIDECARS"):
        pytest.skip("BATON_SIDECARS is not set (clients/test starts the sidecars)")
    return wait_settled()
