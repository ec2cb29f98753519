"""ray_cluster.yaml passes Ray's own cluster-launcher schema (and the check can fail)."""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.conftest import ROOT


def _validate(cfg: dict) -> dict:
    from ray.autoscaler._private.util import prepare_config, validate_config

    cfg = prepare_config(copy.deepcopy(cfg))
    validate_config(cfg)
    return cfg


def test_cluster_yaml_is_valid_for_the_launcher() -> None:
    cfg = _validate(yaml.safe_load((ROOT / "ray_cluster.yaml").read_text()))
    assert cfg["head_node_type"] == "head"
    gpu_types = [t for t, v in cfg["available_node_types"].items() if v["resources"].get("GPU", 0) > 0]
    assert gpu_types, "no GPU worker type"
    assert cfg["available_node_types"]["head"]["resources"]["GPU"] == 0
    assert any("--dashboard-host=127.0.0.1" in c for c in cfg["head_start_ray_commands"])


def test_a_broken_cluster_yaml_is_caught() -> None:
    cfg = yaml.safe_load((ROOT / "ray_cluster.yaml").read_text())
    cfg["head_node_type"] = "nonexistent"
    with pytest.raises(Exception):  # noqa: B017 - Ray raises ValueError or jsonschema errors by version
        _validate(cfg)
