"""What the sync and asyncio gRPC clients share: channel options, requests
and error translation."""

from __future__ import annotations

from typing import Optional

import grpc
from google.protobuf import duration_pb2

from .errors import BatonError, SidecarUnavailableError
from ._address import ENV_GRPC_ADDR
from .v1 import leader_election_pb2 as pb

# Codes that mean "no usable sidecar at this address".
_UNAVAILABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.CANCELLED}


def channel_options(min_backoff: float, max_backoff: float) -> list:
    """Reconnect quickly when the sidecar restarts: gRPC's default backoff
    grows to two minutes, and its resolver waits 30s between re-resolutions
    (even of an IP literal) after a connection drops.
    grpc.min_reconnect_backoff_ms keeps its default: it also bounds each
    connection handshake."""
    ms = int(min_backoff * 1000)
    return [("grpc.initial_reconnect_backoff_ms", ms),
            ("grpc.dns_min_time_between_resolutions_ms", ms),
            ("grpc.max_reconnect_backoff_ms", int(max_backoff * 1000))]


def translate(addr: str, err: grpc.RpcError) -> BatonError:
    """The BatonError for a failed call."""
    code = err.code() if hasattr(err, "code") else None
    if code in _UNAVAILABLE:
        return SidecarUnavailableError(addr, f"{code.name}: {err.details()}", ENV_GRPC_ADDR)
    if code is None:
        return BatonError(f"{addr}: {err}")
    return BatonError(f"{addr}: {code.name}: {err.details()}")


def leadership_request(client_id: str,
                       max_valid_for_ns: Optional[int] = None) -> pb.GetLeadershipRequest:
    """A GetLeadership request from ``client_id`` asking for a promise of at
    most ``max_valid_for_ns`` (None: the whole promise)."""
    req = pb.GetLeadershipRequest(client_id=client_id)
    if max_valid_for_ns is not None:
        req.max_valid_for.FromNanoseconds(max_valid_for_ns)
    return req


def watch_request(heartbeat_interval: float, client_id: str) -> pb.WatchLeadershipRequest:
    """A WatchLeadership request from ``client_id`` asking for heartbeats."""
    d = duration_pb2.Duration()
    d.FromNanoseconds(int(heartbeat_interval * 1e9))
    return pb.WatchLeadershipRequest(heartbeat_interval=d, client_id=client_id)
