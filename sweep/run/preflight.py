"""Reachability checks made before a run starts anything or writes anything: the MLflow tracking
server and the Ray cluster address each get a few seconds to answer, and a dead one is a one-line
error naming what to fix, not a hang of minutes (Ray retries a dead GCS for a long time; MLflow
retries a dead server with backoff after every episode is done)."""

from __future__ import annotations

import os
import socket
import urllib.error
import urllib.parse
import urllib.request
from typing import TYPE_CHECKING

from sweep.config.paths import ray_endpoint

if TYPE_CHECKING:
    from sweep.tracking.choice import TrackingChoice

PROBE_TIMEOUT_S = 5.0
# MLflow's HTTP client defaults wait 120 s per request and retry 7 times with backoff: a dead server
# mid-run would hold the driver for many minutes. Users may still set their own.
MLFLOW_HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "15", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1"}


class Unreachable(RuntimeError):
    """A server the run needs does not answer; the message says what to fix."""


class TrackingFailed(RuntimeError):
    """MLflow could not be written during a run; the Parquet results are stored and a rerun logs them."""


def bound_mlflow_http() -> None:
    """Shorter MLflow HTTP timeouts and retries, unless the user set them."""
    for key, value in MLFLOW_HTTP_DEFAULTS.items():
        os.environ.setdefault(key, value)


def check_tracking(uri: str | None, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Unreachable unless an http(s) tracking server at `uri` answers within `timeout_s`. Other
    schemes (sqlite files, databricks) are not probed."""
    if uri is None or urllib.parse.urlsplit(uri).scheme not in ("http", "https"):
        return
    bound_mlflow_http()
    url = uri.rstrip("/") + "/health"
    try:
        # No proxy from the environment: a local server must be reached directly.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url, timeout=timeout_s):
            return
    except urllib.error.HTTPError:
        return  # it answered: a server is there (its health route may differ)
    except (OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise Unreachable(
            f"tracking.uri: the MLflow server {uri} did not answer within {timeout_s:.0f} s ({reason}); "
            "start it, fix tracking.uri / --tracking-uri / MLFLOW_TRACKING_URI, or pass --no-tracking"
        ) from None


def check_ray_address(address: str | None, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Unreachable unless the cluster at `address` (else RAY_ADDRESS) accepts a TCP connection
    within `timeout_s`; nothing to check for a local Ray."""
    address = address or os.environ.get("RAY_ADDRESS")
    end = ray_endpoint(address) if address else None
    if end is None:
        return
    try:
        with socket.create_connection(end, timeout=timeout_s):
            return
    except OSError as e:
        reason = "no answer" if isinstance(e, TimeoutError) else (e.strerror or type(e).__name__)
        raise Unreachable(
            f"ray.address: the Ray cluster at {address} did not answer within {timeout_s:.0f} s ({reason}); "
            "start it, fix ray.address / --address / RAY_ADDRESS, or leave them unset for a local Ray"
        ) from None


def preflight(tracking: TrackingChoice, address: str | None = None) -> None:
    """The checks `sweep run` and `sweep study` make before they write anything: the tracking server
    (when the command's choice logs) and the cluster address (else RAY_ADDRESS) answer."""
    check_tracking(tracking.uri)
    check_ray_address(address)
