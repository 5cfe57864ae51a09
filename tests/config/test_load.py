"""The one loader (rollout_equality.config.load): overlays merged as Snakemake merges them, defaults filled once."""

import copy

import pytest
import yaml
from conftest import REPO
from snakemake.utils import update_config

from rollout_equality.config.load import load_config, merge, validated
from rollout_equality.config.schema import default

OVERLAYS = [
    ({"a": {"b": 1, "c": [1, 2]}}, {"a": {"c": [3]}}),
    ({"a": {"b": 1}}, {"a": {"b": {"d": 2}}}),
    ({"a": 1}, {"a": {"b": 2}}),
    ({"a": {"b": {"c": 1, "d": 2}}, "e": [1]}, {"a": {"b": {"c": 5}}, "e": {"f": 1}}),
    ({}, {"x": None}),
]


@pytest.mark.parametrize("config, overlay", OVERLAYS)
def test_an_overlay_merges_as_snakemake_merges_it(config, overlay):
    expected = copy.deepcopy(config)
    update_config(expected, copy.deepcopy(overlay))
    assert merge(copy.deepcopy(config), copy.deepcopy(overlay)) == expected


def test_the_loader_fills_every_default_and_leaves_its_input_alone(tmp_path):
    shipped = yaml.safe_load((REPO / "config.yaml").read_text())
    given = copy.deepcopy(shipped)
    loaded = validated(given)
    assert given == shipped  # a new dict: the workflow's config is updated with it
    assert loaded["condition"] == {key: default("condition", key) for key in ("atol", "row_sum_atol")}
    assert load_config([str(REPO / "config.yaml")]) == loaded
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("condition: {atol: 0.001}\n")
    assert load_config([str(REPO / "config.yaml"), str(overlay)])["condition"]["atol"] == 0.001
    alone = load_config([str(overlay)])  # an overlay alone: every other setting the schema's default
    assert alone["extraction"]["batch_size"] == default("extraction", "batch_size") and alone["models"] == {}


def test_a_key_at_the_top_level_is_named():
    with pytest.raises(ValueError, match="config: the top level: 'baselin' does not match"):
        validated({**yaml.safe_load((REPO / "config.yaml").read_text()), "baselin": {}})
