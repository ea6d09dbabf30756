"""conf/ composes into params.yaml; every config option validates; bad configs fail with the key's name."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
import yaml

from xurs_pipeline.config import (
    QUESTION_SELECTION,
    ConfigError,
    attribution_fingerprint,
    compose,
    load_params,
    validate,
)

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
GROUPS = sorted(p.name for p in CONF.iterdir() if p.is_dir())


def test_params_yaml_is_the_composition_of_conf():
    committed = yaml.safe_load((ROOT / "params.yaml").read_text())
    assert committed == compose(conf_dir=CONF), "params.yaml drifted from conf/: run `xurs params`"


def test_params_yaml_validates():
    cfg = load_params(ROOT / "params.yaml")
    assert cfg.experiment_name


@pytest.mark.parametrize(
    ("group", "option"),
    [(g, p.stem) for g in GROUPS for p in sorted((CONF / g).glob("*.yaml"))],
)
def test_every_config_option_composes_and_validates(group, option):
    composed = compose([f"{group}={option}"], conf_dir=CONF)
    validate(composed, source=f"{group}={option}")


@pytest.mark.parametrize(
    ("patch", "key"),
    [
        ({"data": {"sourc": "medqa"}}, "data.sourc"),
        ({"data": {"max_tokens": "many"}}, "data.max_tokens"),
        ({"data": {"max_tokens": -3}}, "data.max_tokens"),
        ({"nonsense": 1}, "nonsense"),
    ],
)
def test_bad_config_fails_naming_the_key(patch, key):
    base = compose(conf_dir=CONF)
    for section, value in patch.items():
        if isinstance(value, dict):
            base.setdefault(section, {}).update(value)
        else:
            base[section] = value
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        validate(base)


def test_the_part_key_ignores_only_the_question_selection():
    """A finished question does not depend on which other questions run (``QUESTION_SELECTION``); it does
    depend on everything else, e.g. the estimator's budget."""
    base = validate(compose(conf_dir=CONF))
    widened = validate(compose(["attribution.max_questions=24", "attribution.split=dev"], conf_dir=CONF))
    costlier = validate(compose(["attribution.ig_points=128"], conf_dir=CONF))  # the default IG's budget
    part_key = partial(attribution_fingerprint, per_question=True)
    assert attribution_fingerprint(base) != attribution_fingerprint(widened)
    assert part_key(base) == part_key(widened)
    assert part_key(base) != part_key(costlier)
    assert set(QUESTION_SELECTION) <= set(vars(base.attribution))
    limited = validate(compose(["attribution.max_grad_evals=100000"], conf_dir=CONF))  # a limit only
    assert attribution_fingerprint(limited) == attribution_fingerprint(base)
    assert part_key(limited) == part_key(base)
