"""`sweep.engines.pool.local_agents`: a config's agents with in-process engines (benches, tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.config.sweep import load_config
from sweep.engines.pool import local_agents

CONFIG = Path(__file__).resolve().parents[1] / "examples" / "cpp_calibrated.yaml"


def test_the_team_by_default_with_each_models_prices_and_sampling() -> None:
    cfg = load_config(str(CONFIG))
    agents = local_agents(cfg)
    assert set(agents) == set(cfg.team())
    pear = load_config(str(CONFIG.parent / "table_pear.yaml"))  # a model outside its team: no engine
    assert set(local_agents(pear)) == {"sim-llama"} != set(pear.models)
    for name, agent in agents.items():
        spec = cfg.models[name]
        assert (agent.model, agent.price_in, agent.price_out) == (name, spec.price_in, spec.price_out)
        assert agent.max_tokens == spec.sampling.max_tokens


def test_only_the_models_asked_for_and_an_unknown_one_is_refused() -> None:
    cfg = load_config(str(CONFIG))
    first = cfg.team()[0]
    assert list(local_agents(cfg, [first, first])) == [first]
    with pytest.raises(KeyError, match="no-such-model"):
        local_agents(cfg, ["no-such-model"])
