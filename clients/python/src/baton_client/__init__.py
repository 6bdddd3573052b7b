"""baton_client: ask the baton leader-election sidecar beside this
application whether this pod leads, and get the fencing token to tag writes
with.

* :class:`HttpClient` — standard library only (GET /leader); always
  importable.
* :class:`Client` (blocking) and :class:`AsyncClient` (asyncio) — gRPC, with
  a streaming ``watch()``; need ``pip install "baton-client[grpc]"``.
* :class:`Fence`, :func:`token_headers`, :func:`revision_headers` and their
  readers — the store side of fencing and how a write carries its token.
* ``run_while_leader`` on every client — the application's leader work,
  ended with the term and then acknowledged, so a graceful handover is fast.

Every client reconnects by itself when the sidecar restarts, and raises
:class:`SidecarUnavailableError` while none answers: treat it as "not
leader".
"""

from typing import Any

from ._address import DEFAULT_GRPC_ADDR, DEFAULT_HTTP_ADDR, ENV_GRPC_ADDR, ENV_HTTP_ADDR
from ._lease import ENV_LEASE_NAME, ENV_LEASE_NAMESPACE
from .errors import (BatonError, NotLeaderError, SidecarUnavailableError, StaleTokenError,
                     WrongLeaseError)
from .fence import (REVISION_HEADER, TOKEN_HEADER, Fence, revision_from_headers,
                    revision_headers, token_from_headers, token_headers)
from .http import HttpClient
from .leadership import REQUIRE_LEADER_SLACK, Leadership, boottime

__all__ = [
    "AsyncClient", "BatonError", "Client", "DEFAULT_GRPC_ADDR", "DEFAULT_HTTP_ADDR",
    "ENV_GRPC_ADDR", "ENV_HTTP_ADDR", "ENV_LEASE_NAME", "ENV_LEASE_NAMESPACE", "Fence",
    "HttpClient", "Leadership", "NotLeaderError", "REQUIRE_LEADER_SLACK", "REVISION_HEADER",
    "SidecarUnavailableError", "StaleTokenError", "TOKEN_HEADER", "WrongLeaseError", "boottime",
    "revision_from_headers", "revision_headers", "token_from_headers", "token_headers",
]


def __getattr__(name: str) -> Any:
    # The gRPC clients import grpc only when asked for, so HTTP-only
    # applications need no gRPC installed.
    if name == "Client":
        from .client import Client
        return Client
    if name == "AsyncClient":
        from .aio import AsyncClient
        return AsyncClient
    raise AttributeError(f"module 'baton_client' has no attribute {name!r}")
