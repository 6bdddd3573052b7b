"""Where the sidecar is: an explicit address, else an environment variable,
else baton's default."""

from __future__ import annotations

import os
from typing import Optional

DEFAULT_GRPC_ADDR = "127.0.0.1:4041"
DEFAULT_HTTP_ADDR = "127.0.0.1:4040"
ENV_GRPC_ADDR = "BATON_GRPC_ADDR"
ENV_HTTP_ADDR = "BATON_HTTP_ADDR"


def resolve(addr: Optional[str], env_var: str, default: str, allow_unix: bool) -> str:
    """Returns ``addr``, else ``$env_var``, else ``default``, normalized:
    ":4041" means 127.0.0.1:4041. Raises ValueError for anything but
    host:port, :port or (if ``allow_unix``) unix:PATH, naming the variable."""
    source = "address"
    if not addr:
        addr = os.environ.get(env_var, "")
        source = f"${env_var}"
    if not addr:
        return default
    if allow_unix and addr.startswith("unix:"):
        return addr
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or (host.startswith("[") != host.endswith("]")):
        form = "host:port, :port or unix:PATH" if allow_unix else "host:port or :port"
        raise ValueError(f"{source} {addr!r} is not {form}")
    return f"{host or '127.0.0.1'}:{port}"
