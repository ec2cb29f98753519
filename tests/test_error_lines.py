"""One wording for every config file's validation errors (`sweep.config.errors.validation_line`): the
field's path, an unknown key's did-you-mean from the keys known where it stands, a missing key's
pointer to the docs, a type error's fix."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from sweep.config.errors import field_path, validation_line
from sweep.config.sweep import ModelSpec, one_line
from sweep.study.config import StudyConfig
from sweep.study.config import _one_line as study_line
from sweep.train.config import _line as train_line
from sweep.train.config import config_class


def error(cls: Any, raw: dict[str, Any]) -> ValidationError:
    with pytest.raises(ValidationError) as e:
        cls.model_validate(raw)
    return e.value


def test_paths_and_the_three_kinds_of_error() -> None:
    assert field_path(("datasets", 0, "name")) == "datasets[0].name"
    assert field_path(()) == ""
    e = error(ModelSpec, {"engine": "simulated", "argz": {}})
    assert validation_line(e, lambda loc: ["args", "engine"]) == (
        "argz: unknown key (did you mean 'args'?); remove it or fix its spelling"
    )
    e = error(config_class(), {})
    assert train_line(e) == "sweep: required key is missing; add it (see the README's config reference)"
    e = error(config_class(), {"sweep": "s.yaml", "ppo": {"updates": "many"}})
    assert train_line(e) == (
        "ppo.updates: Input should be a valid integer; give a whole number such as 3 (not true/false, not quoted)"
    )


def test_each_file_hints_from_its_own_keys() -> None:
    """A training's unknown key is matched against its own section; a study's against the study's."""
    assert train_line(error(config_class(), {"sweep": "s.yaml", "ppo": {"lrr": 0.1}})) == (
        "ppo.lrr: unknown training key (did you mean 'lr'?); remove it or fix its spelling"
    )
    raw = {"sweep": "s.yaml", "method": "pear", "search_space": "pear", "n_trails": 3}
    assert study_line(error(StudyConfig, raw)) == (
        "n_trails: unknown study key (did you mean 'n_trials'?); remove it or fix its spelling"
    )
    e = error(ModelSpec, {"engine": "simulated", "price_inn": 1.0})
    assert one_line(e) == "price_inn: unknown key (did you mean 'price_in'?); remove it or fix its spelling"
