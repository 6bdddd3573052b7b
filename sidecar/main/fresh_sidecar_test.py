#!/usr/bin/env python3
"""A freshly started baton, as an operator's tooling sees it.

Starts bin/baton against the real control plane (BATON_CONTROLPLANE_DIR, the
ctest fixture) with --log-format=json, and:
  * scrapes /metrics at once, before the sidecar has done anything, and
    parses it with prometheus_client's parser: every metric that the
    runbook's queries use, and every metric in its metrics table, is there,
    with a series for each label value a query asks for
    (`baton_renews_total{result="failure"}`);
  * waits until it leads, scrapes again (leader_election_master_status 1);
  * stops it with SIGTERM and reads its log: every line one JSON object with
    ts, level and event, and every transition line keeps its `next` key;
  * meanwhile starts a second sidecar, which follows;
  * finds the Events the two recorded on the Lease (became leader, observed
    a new leader, stopped leading, released).

Exit code 77 (skipped) if prometheus_client is missing and pip cannot
install it.
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "api"))
from metrics_prometheus_test import ensure_prometheus_client, fetch  # noqa: E402

# Names in the runbook that are metric names.
METRIC = re.compile(r"\b((?:baton|leader_election|process)_[a-z_]+)(\{[^}]*\})?")
# One equality matcher inside a selector: key="value".
EQUALS = re.compile(r'(\w+)="([^"]*)"')
REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TRANSITIONS = {"acquired", "lost", "stepped_down", "released", "observed_holder"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def runbook_selectors(runbook):
    """(metric, {label: value}) for every selector in the runbook's PromQL
    blocks and every metric named in its Metrics table."""
    text = open(runbook).read()
    selectors = []
    for block in re.findall(r"```promql\n(.*?)```", text, re.S):
        for name, labels in METRIC.findall(block):
            selectors.append((name, dict(EQUALS.findall(labels))))
    section = text.split("## Metrics", 1)[1].split("\n## ", 1)[0]
    for row in section.splitlines():
        if row.startswith("| `"):
            first_column = row.split(" | ", 1)[0]
            selectors += [(name, {}) for name in re.findall(r"`([a-z_]+)", first_column)]
    assert len(selectors) > 10, selectors
    return selectors


def families(text):
    from prometheus_client.parser import text_string_to_metric_families
    return {family.name: family for family in text_string_to_metric_families(text)}


def check_selectors(selectors, scraped):
    """Every metric's family is exposed (# HELP, # TYPE); where a selector asks
    for label values, a series with them exists already."""
    for name, labels in selectors:
        # prometheus_client names counter families without _total, and a
        # histogram's family has none of its series' suffixes.
        family = scraped.get(re.sub(r"_(total|bucket|count|sum)$", "", name))
        assert family is not None, f"no {name} in a fresh sidecar's /metrics"
        if labels:
            assert any(all(s.labels.get(k) == v for k, v in labels.items())
                       for s in family.samples), f"no series {name}{labels} yet: {family.samples}"


def wait_for(what, predicate, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if predicate():
                return
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def check_log(path):
    lines = open(path).read().splitlines()
    events = []
    for line in lines:
        record = json.loads(line)
        for key in ("ts", "level", "event"):
            assert key in record, f"no {key} in {line}"
        assert all(isinstance(v, str) for v in record.values()), line
        if record["event"] in TRANSITIONS:
            assert "next" in record, f"transition without next: {line}"
        events.append(record["event"])
    for event in ("configured", "started", "acquired", "stepped_down", "released", "exited"):
        assert event in events, f"no event={event} in {events}"


def lease_event_notes(controlplane, lease):
    """The notes of the events.k8s.io Events about Lease `lease` in default."""
    out = subprocess.run(
        [os.path.join(REPO, "scripts", "controlplane"), "kubectl", controlplane, "-n", "default",
         "get", "events.events.k8s.io", "-o", "json"],
        check=True, capture_output=True, text=True).stdout
    return [e["note"] for e in json.loads(out)["items"] if e["regarding"]["name"] == lease]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--baton", required=True)
    parser.add_argument("--runbook", required=True)
    args = parser.parse_args()
    if not ensure_prometheus_client():
        return 77
    controlplane = os.environ["BATON_CONTROLPLANE_DIR"]
    kubeconfig = os.path.join(controlplane, "kubeconfig")
    lease = f"fresh-{os.getpid()}"
    selectors = runbook_selectors(args.runbook)

    def start(log, http_port):
        with open(log, "w") as stderr:
            return subprocess.Popen(
                [args.baton, f"--lease-name={lease}", "--lease-namespace=default",
                 f"--kubeconfig={kubeconfig}", f"--http-addr=127.0.0.1:{http_port}",
                 f"--grpc-addr=127.0.0.1:{free_port()}", "--log-format=json",
                 # Short terms: a new Lease is created one lease duration
                 # (plus two retry periods) after the first read.
                 "--lease-duration=3s", "--renew-deadline=1500ms", "--retry-period=250ms"],
                stderr=stderr)

    http_port, follower_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as tmp:
        log, follower_log = os.path.join(tmp, "baton.log"), os.path.join(tmp, "follower.log")
        baton = start(log, http_port)
        try:
            first = []
            wait_for("/metrics", lambda: first.append(fetch(http_port, "/metrics")[2]) is None)
            check_selectors(selectors, families(first[0]))

            def leads():
                return json.loads(fetch(http_port, "/leader")[2])["isLeader"]
            wait_for("leadership", leads)
            status = families(fetch(http_port, "/metrics")[2])["leader_election_master_status"]
            assert [s.value for s in status.samples] == [1], status.samples

            follower = start(follower_log, follower_port)
            try:
                wait_for("the follower to see the leader", lambda: json.loads(
                    fetch(follower_port, "/leader")[2]).get("holderIdentity"))
            finally:
                follower.send_signal(signal.SIGTERM)
                assert follower.wait(timeout=30) == 0, open(follower_log).read()
        except AssertionError:
            print(open(log).read())
            raise
        finally:
            baton.send_signal(signal.SIGTERM)
            code = baton.wait(timeout=30)
        assert code == 0, f"baton exited {code}:\n" + open(log).read()
        check_log(log)
        notes = lease_event_notes(controlplane, lease)
        for said in ("became leader", "observed a new leader", "stopped leading: shutdown",
                     "released the Lease"):
            assert any(said in note for note in notes), f"no Event saying {said!r}: {notes}"
    print(f"ok: {len(selectors)} runbook metrics in a fresh sidecar's /metrics; JSON log lines; "
          f"{len(notes)} Events")
    return 0


if __name__ == "__main__":
    sys.exit(main())
