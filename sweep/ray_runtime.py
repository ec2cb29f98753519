"""Starting or attaching to Ray. A local Ray binds to 127.0.0.1 only."""

from __future__ import annotations

import logging
import os
from typing import Any

# Ray binds the machine's routable address unless told otherwise; these must be set before Ray starts
# its processes (they inherit the environment). Users can still override them.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def init_ray(address: str | None = None, num_cpus: int | None = None) -> dict[str, Any]:
    """Attach to `address` (or RAY_ADDRESS, as `ray job submit` sets it), else start a private local
    Ray. Returns a short description of what it did."""
    import ray

    if ray.is_initialized():
        return {"mode": "existing"}
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, log_to_driver=False)
        return {"mode": "cluster", "address": address}
    _quiet_token_notice()
    # address="local" never attaches to a stray cluster someone else started on this machine.
    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    return {"mode": "local"}


def _drop_token_notice(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Token authentication is enabled for this Ray cluster")


def _quiet_token_notice() -> None:
    """Ray 2.60 turns token auth on for every new local cluster and says so on every start. For the
    private 127.0.0.1 cluster this package starts that is noise; auth stays on, the notice goes."""
    log = logging.getLogger("ray._private.authentication.authentication_token_setup")
    if _drop_token_notice not in log.filters:
        log.addFilter(_drop_token_notice)


def shutdown_ray() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()
