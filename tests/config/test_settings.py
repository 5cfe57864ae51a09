"""The typed config sections (rollout_equality.config.settings): each record follows its section of the schema, bad
sections are named, and the library's workflow-level functions take settings without defaults of their own."""

import dataclasses
import inspect

import pytest
import yaml
from schema import SCHEMA, validated

from rollout_equality import measure
from rollout_equality.acquire import extract
from rollout_equality.condition import baseline
from rollout_equality.config.settings import SECTIONS, Condition, Extraction, from_section
from rollout_equality.tabular import ftt


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_each_record_has_the_fields_of_its_schema_section(section):
    properties = yaml.safe_load(SCHEMA.read_text())["properties"][section]["properties"]
    assert {f.name for f in dataclasses.fields(SECTIONS[section])} == set(properties)


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_a_validated_section_gives_its_record(section):
    values = validated()[section]
    record = from_section(SECTIONS[section], values)
    assert {k: v for k, v in dataclasses.asdict(record).items()} == {
        k: tuple(v) if isinstance(v, list) else v for k, v in values.items()
    }


def test_a_section_that_was_not_validated_is_named():
    values = dict(validated()["extraction"])
    del values["image_backend"]  # the schema's default, filled in by validation
    with pytest.raises(ValueError, match=r"'extraction': missing \['image_backend'\].*validate the config"):
        from_section(Extraction, values)
    with pytest.raises(ValueError, match=r"unknown \['tolerance'\]"):
        from_section(Condition, {"atol": 1e-9, "row_sum_atol": 1e-5, "tolerance": 1})


@pytest.mark.parametrize(
    "function, settings",
    [
        (measure.measure, ["extraction", "condition"]),
        (measure.measure_inputs, ["condition", "reading"]),
        (measure.measure_and_write, ["reading", "condition"]),
        (ftt.measure_ftt, ["device", "condition"]),
        (ftt.train_ftt, ["batch_size", "device", "max_epochs", "patience", "binary_head"]),
        (baseline.random_baseline, ["atol", "chunk_size"]),
        (extract.load, ["device"]),
    ],
)
def test_settings_have_no_default_in_the_library(function, settings):
    """A setting of config.yaml reaches these functions from the config (its default is the schema's), so
    none of them holds one of its own."""
    parameters = inspect.signature(function).parameters
    assert [s for s in settings if parameters[s].default is not inspect.Parameter.empty] == []


def test_the_command_line_takes_its_settings_from_the_config_and_its_flags(tmp_path, capsys):
    """`rollout-equality condition`: condition.atol of config.yaml, of a --configfile merged into it, or of --atol
    (the tie count grows with the tolerance)."""
    import json

    import numpy as np

    from rollout_equality.cli import main

    np.save(tmp_path / "A.npy", np.array([[1, 0, 0, 0], [0.6, 0.4, 0, 0], [0.75, 0.1, 0.15, 0], [0.9, 0, 0, 0.1]]))
    mine = tmp_path / "mine.yaml"
    mine.write_text("condition: {atol: 0.5}\n")  # merged into config.yaml: row_sum_atol stays config.yaml's
    for extra, ties in (([], 2), (["--configfile", str(mine)], 6), (["--configfile", str(mine), "--atol", "0.1"], 3)):
        assert main(["condition", str(tmp_path / "A.npy"), *extra]) == 0
        assert json.loads(capsys.readouterr().out)["n_max_pairs"] == ties, extra
