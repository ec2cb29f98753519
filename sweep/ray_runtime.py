"""Starting or attaching to Ray. A local Ray binds to 127.0.0.1 only."""

from __future__ import annotations

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
    # address="local" never attaches to a stray cluster someone else started on this machine.
    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    return {"mode": "local"}


def shutdown_ray() -> None:
    import ray

    if ray.is_initialized():
        ray.shutdown()
