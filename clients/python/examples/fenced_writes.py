#!/usr/bin/env python3
"""Fenced writes end to end: a toy key-value store that refuses stale
fencing tokens, and a writer that writes only while its baton sidecar says
this pod leads, tagging every write with the token.

    python3 fenced_writes.py store  [--listen 127.0.0.1:7070]
    python3 fenced_writes.py writer [--store http://127.0.0.1:7070] [--key counter]
                                    [--every 1] [--http]

Run one store and one writer beside each sidecar ($BATON_GRPC_ADDR, or
$BATON_HTTP_ADDR with --http, selects the sidecar). Only the leader's writer
writes: it writes inside run_while_leader, which stops the writes when the
term ends and then acknowledges the step-down, so a graceful handover takes
milliseconds. After a handover the tokens go up, and a late write from the
old leader is answered 409 Conflict.
"""

import argparse
import http.server
import signal
import socket
import threading
import urllib.error
import urllib.request

import baton_client
from baton_client import BatonError, Fence, StaleTokenError


class Store(http.server.BaseHTTPRequestHandler):
    """PUT/GET /kv/KEY. One lock covers the fence check and the write, so no
    stale write can slip in between."""

    lock = threading.Lock()
    fence = Fence()
    data: dict = {}

    def do_PUT(self) -> None:
        key = self.path.removeprefix("/kv/")
        try:
            token = baton_client.token_from_headers(dict(self.headers))
        except ValueError as e:
            return self.send_error(400, str(e))
        value = self.rfile.read(min(int(self.headers.get("Content-Length", 0)), 1 << 16))
        with self.lock:
            try:
                self.fence.admit(token)
            except StaleTokenError as e:
                self.log_message("refused %s=%r: %s", key, value, e)
                return self.send_error(409, str(e))
            self.data[key] = value
        self.log_message("wrote %s=%r with token %d", key, value, token)
        self.send_response(204)
        self.end_headers()

    def do_GET(self) -> None:
        with self.lock:
            value = self.data.get(self.path.removeprefix("/kv/"))
        if value is None:
            return self.send_error(404, "no such key")
        self.send_response(200)
        self.end_headers()
        self.wfile.write(value + b"\n")


def put(url: str, value: str, token: int, timeout: float) -> None:
    """One fenced write: the token travels in the Baton-Fencing-Token header."""
    req = urllib.request.Request(url, data=value.encode(), method="PUT",
                                 headers=baton_client.token_headers(token))
    urllib.request.urlopen(req, timeout=timeout).close()


def writer(args: argparse.Namespace) -> None:
    client = baton_client.HttpClient() if args.http else baton_client.Client()
    shutdown = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: shutdown.set())
    signal.signal(signal.SIGINT, lambda *_: shutdown.set())
    count = 0

    def work(term: baton_client.Leadership, cancelled: threading.Event) -> None:
        """Writes while this term lasts; ``cancelled`` is set when it ends."""
        nonlocal count
        print(f"leading with token {term.fencing_token} (revision {term.fencing_revision})",
              flush=True)
        while not cancelled.is_set():
            count += 1
            try:
                # A fresh answer per write: how long this write may take.
                token = client.require_leader(min_validity=args.min_validity)
                # Finish within the guarantee: the store still checks the token.
                put(f"{args.store}/kv/{args.key}", f"{socket.gethostname()} #{count}", token,
                    timeout=args.min_validity)
                print(f"write {count} done with token {token}", flush=True)
            except BatonError as e:  # NotLeaderError, or no sidecar
                print(f"not writing: {e}", flush=True)
            except (urllib.error.URLError, OSError) as e:  # 409 from the fence, or no store
                print(f"write {count} failed: {e}", flush=True)
            cancelled.wait(args.every)
        print(f"term with token {term.fencing_token} ended: stopped writing", flush=True)

    print("waiting for leadership", flush=True)
    # Returns on SIGTERM once the writes have stopped and are acknowledged.
    client.run_while_leader(work, stop=shutdown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    store = sub.add_parser("store")
    store.add_argument("--listen", default="127.0.0.1:7070")
    w = sub.add_parser("writer")
    w.add_argument("--store", default="http://127.0.0.1:7070")
    w.add_argument("--key", default="counter")
    w.add_argument("--every", type=float, default=1.0, help="seconds between writes")
    w.add_argument("--min-validity", type=float, default=0.5,
                   help="write only with at least this many seconds of leadership left")
    w.add_argument("--http", action="store_true", help="ask the sidecar over HTTP, not gRPC")
    args = parser.parse_args()
    if args.command == "store":
        host, port = args.listen.rsplit(":", 1)
        print(f"toy store on {args.listen}", flush=True)
        http.server.ThreadingHTTPServer((host, int(port)), Store).serve_forever()
    else:
        writer(args)


if __name__ == "__main__":
    main()
