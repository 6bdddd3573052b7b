#!/usr/bin/env python3
"""GET /metrics parsed by the reference Prometheus text parser.

Starts api_bench_server (the local API over a fixed snapshot in which this
process leads), scrapes /metrics from the API address and from the separate
probes-and-metrics address, parses both with prometheus_client's parser, and
checks that leader_election_master_status flips 1 -> 0 -> 1 across handovers
(POST /resign on the bench server hands leadership over and back).

Exit code 77 (skipped) if prometheus_client is missing and pip cannot
install it.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request


def ensure_prometheus_client():
    try:
        import prometheus_client  # noqa: F401
        return True
    except ImportError:
        pass
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "prometheus_client"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if install.returncode != 0:
        print("prometheus_client unavailable and pip install failed:\n" + install.stderr)
        return False
    return True


def fetch(port, path, method="GET"):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.status, response.headers.get("Content-Type"), response.read().decode()


def parse(text):
    from prometheus_client.parser import text_string_to_metric_families
    return {family.name: family for family in text_string_to_metric_families(text)}


def master_status(families):
    samples = families["leader_election_master_status"].samples
    assert len(samples) == 1, samples
    assert samples[0].labels == {"name": "bench"}, samples[0].labels
    return samples[0].value


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    args = parser.parse_args()
    if not ensure_prometheus_client():
        return 77

    with tempfile.TemporaryDirectory() as tmp:
        ready = os.path.join(tmp, "ports")
        server = subprocess.Popen([
            args.server, "--http_addr=127.0.0.1:0", "--grpc_addr=127.0.0.1:0",
            "--metrics_addr=127.0.0.1:0", f"--ready_file={ready}"])
        try:
            deadline = time.time() + 30
            while not os.path.exists(ready):
                assert server.poll() is None, "api_bench_server exited"
                assert time.time() < deadline, "api_bench_server did not start"
                time.sleep(0.05)
            http_port, _, metrics_port = (int(p) for p in open(ready).read().split())

            fetch(http_port, "/leader")  # so the request counter has a sample
            for port in (http_port, metrics_port):
                status, content_type, text = fetch(port, "/metrics")
                assert status == 200
                assert content_type == "text/plain; version=0.0.4; charset=utf-8", content_type
                families = parse(text)
                expected = {
                    "leader_election_master_status": "gauge",
                    "baton_fencing_token": "gauge",
                    "baton_leader_valid_for_seconds": "gauge",
                    "baton_lease_observed": "gauge",
                    "baton_build_info": "gauge",
                    # prometheus_client strips _total from counter family names.
                    "baton_leadership_transitions": "counter",
                    "baton_kube_api_requests": "counter",
                    "baton_kube_api_request_duration_seconds": "histogram",
                    "baton_renew_duration_seconds": "histogram",
                    "baton_renews": "counter",
                    "baton_http_requests": "counter",
                    "baton_http_connections": "gauge",
                    "baton_grpc_requests": "counter",
                    "baton_grpc_watchers": "gauge",
                }
                for name, kind in expected.items():
                    assert name in families, f"{name} missing from {sorted(families)}"
                    assert families[name].type == kind, (name, families[name].type)
                requests = families["baton_http_requests"].samples
                assert any(s.labels == {"route": "/leader", "code": "200"} and s.value >= 1
                           for s in requests), requests

            assert master_status(parse(fetch(metrics_port, "/metrics")[2])) == 1
            fetch(http_port, "/resign", method="POST")
            assert master_status(parse(fetch(metrics_port, "/metrics")[2])) == 0
            token = parse(fetch(http_port, "/metrics")[2])["baton_fencing_token"].samples[0].value
            assert token == 2, token
            fetch(http_port, "/resign", method="POST")
            assert master_status(parse(fetch(http_port, "/metrics")[2])) == 1
        finally:
            server.terminate()
            assert server.wait(timeout=10) == 0, "api_bench_server did not shut down cleanly"
    print("ok: /metrics parses with prometheus_client; leader_election_master_status flips")
    return 0


if __name__ == "__main__":
    sys.exit(main())
