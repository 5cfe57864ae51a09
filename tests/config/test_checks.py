"""Cross-references of config.yaml that the schema cannot check (rollout_equality.config.checks)."""

import copy
from pathlib import Path

import pytest
import yaml
from conftest import REPO

from rollout_equality.config import schema
from rollout_equality.config.checks import check_references
from rollout_equality.config.load import checked


def _validated(path: Path) -> dict:
    """A config file as a run sees it: checked against the schema, defaults filled in (check_references runs after
    that)."""
    return checked((), "config", yaml.safe_load(path.read_text()))


SHIPPED = _validated(REPO / "config.yaml")


def test_the_shipped_and_the_tiny_configs_refer_to_defined_entries():
    check_references(SHIPPED)
    check_references(_validated(REPO / ".test" / "config.yaml"))


@pytest.mark.parametrize(
    "mutate, message",
    [
        (
            lambda c: c["suites"]["paper"].append({"model": "gpt5", "dataset": "wikitext"}),
            "suite 'paper': model 'gpt5' is not defined under models",
        ),
        (
            lambda c: c["suites"]["offline"].append({"model": "minilm", "dataset": "imagenet_mini"}),
            "suite 'offline': data set 'imagenet_mini' is not defined under datasets",
        ),
        (
            lambda c: c["suites"]["offline"].append({"model": "minilm", "dataset": "imagenet_photos"}),
            "suite 'offline': model 'minilm' reads text but data set 'imagenet_photos' holds image",
        ),
        (
            lambda c: c["tabular"]["suites"]["paper"].append("higgs"),
            "tabular suite 'paper': table 'higgs' is not defined under tabular.datasets",
        ),
        (
            lambda c: c["dynamics"]["albert"]["suites"]["offline"].update(
                model="dinov2_small_random", dataset="imagenet_photos"
            ),
            "dynamics.albert.suites.offline (ALBERT): the model 'dinov2_small_random' and data set 'imagenet_photos' are image; "
            "it needs text",
        ),
        (
            lambda c: c["dynamics"]["albert"]["suites"]["paper"].update(model="albert_large"),
            "dynamics.albert.suites.paper (ALBERT): model 'albert_large' is not defined",
        ),
        (
            lambda c: c["tabular"]["ablation"].update(table="higgs"),
            "tabular.ablation: table 'higgs' is not defined under tabular.datasets",
        ),
        (
            lambda c: c["tabular"]["ablation"].update(suites=["nightly"]),
            "tabular.ablation.suites: 'nightly' is not a suite",
        ),
        (
            lambda c: c["tabular"]["ablation"].update(claim="deit"),
            "tabular.ablation.claim: 'deit' is not a claim of kind rate",
        ),
        (
            lambda c: c["tabular"]["ablation"].update(claim="late_failures"),
            "tabular.ablation.claim: 'late_failures' is not a claim of kind rate",
        ),
        (
            lambda c: c["claims"]["content"]["out_of_sample"].update(gpt5="a model nobody defined"),
            "claims.content: subject 'gpt5' is not defined under models",
        ),
        (
            lambda c: c["claims"].update(again=dict(c["claims"]["baseline"])),
            "claims: baseline, again are all of kind baseline; keep one",
        ),
        (
            lambda c: c["suites"]["paper"].append(
                {
                    "model": "minilm",
                    "dataset": "pydoc_topics",
                    "inputs": 7,
                    "per_head": True,
                    "fusions": ["mean", "max", "min"],
                }
            ),
            "experiment minilm on pydoc_topics is measured once but its suites ask for different inputs",
        ),
        (
            lambda c: c["suites"]["offline"][0].update(inputs=10_000),
            "inputs 10000 exceeds the data set's n (200): lower inputs or raise datasets.pydoc_topics.n",
        ),
        (
            lambda c: c["tabular"]["datasets"]["california"].update(split={"test": "source"}),
            "tabular table 'california': split test: source needs a csv source with `test_path`",
        ),
    ],
)
def test_a_reference_to_nothing_valid_names_the_entry(mutate, message):
    config = copy.deepcopy(SHIPPED)
    mutate(config)
    with pytest.raises(ValueError) as err:
        check_references(config)
    assert message in str(err.value)


def test_ablation_tables_change_only_what_their_setting_names():
    from rollout_equality.config.checks import resolved_tables

    tables = resolved_tables(SHIPPED)
    ablation = SHIPPED["tabular"]["ablation"]
    names = [f"{ablation['table']}@{s}" for s in ablation["settings"]]
    assert [t for t in tables if "@" in t] == names
    base, ref = tables[ablation["table"]], tables[f"{ablation['table']}@reference"]
    # the reference setting is the table itself, trained with the ablation's seeds and training
    assert {k: v for k, v in ref.items() if k not in ("seeds", "training", "ablation")} == {
        k: v for k, v in base.items() if k not in ("seeds", "training")
    }
    assert ref["seeds"] == ablation["seeds"] and ref["training"]["max_epochs"] == 200
    assert ref["recipe"] == SHIPPED["tabular"]["recipe"]  # the default recipe is the reference one
    two = tables[f"{ablation['table']}@two_logits"]
    assert two["recipe"] == {**ref["recipe"], "binary_head": "two_logits"} and two["split"] == ref["split"]
    assert tables[f"{ablation['table']}@data_only"]["source"]["csv"]["test_path"] is None


def test_an_entry_is_completed_with_the_schema_defaults_for_the_command_line(tmp_path, capsys):
    from rollout_equality.cli import main
    from rollout_equality.config.load import with_defaults

    spec = {"modality": "text", "source": {"pydoc_topics": True}, "n": 3, "seed": 0}
    full = with_defaults("datasets", "t", spec)
    assert (full["min_words"], full["max_words"]) == (8, 100) and "min_words" not in spec
    assert (
        main(
            [
                "prepare",
                "t",
                '{"modality": "text", "source": {"pydoc_topics": true}, "n": 3, "seed": 0}',
                "--out",
                str(tmp_path / "t"),
            ]
        )
        == 0
    )
    assert (tmp_path / "t" / "segments.jsonl").read_text().count("\n") == 3
    assert (
        main(
            [
                "prepare",
                "t",
                '{"modality": "text", "source": {"pydoc_topics": true}, "n": 3}',
                "--out",
                str(tmp_path / "u"),
            ]
        )
        == 2
    )
    assert "datasets entry 't'" in capsys.readouterr().err and not (tmp_path / "u").exists()


def test_the_librarys_enumerations_are_the_schemas():
    """The library checks its arguments against the schema's enums (stated there only), not copies of them."""
    from rollout_equality.config.schema import choices

    assert choices("$defs", "binary_head") == ("one_logit", "two_logits")
    assert choices("properties", "extraction", "properties", "image_backend") == ("pil", "torchvision")
    task = ("properties", "tabular", "properties", "datasets", "additionalProperties", "properties", "task")
    assert choices(*task) == ("regression", "binclass", "multiclass")


def test_a_models_description_names_every_source_it_may_have():
    """The schema states the sources once (``oneOf``); the description docs/configuration.md shows names each."""
    node = schema.node("properties", "models", "additionalProperties")
    sources = [alternative["required"][0] for alternative in node["oneOf"]]
    assert sources == ["hub", "local", "dist_zip", "onnx_export", "random_init"]
    described = node["description"].split("one source:", 1)[1]
    assert [s for s in sources if s not in described] == [] and "package:MODULE" in described


def test_an_experiment_measures_the_inputs_its_suites_give_it():
    from rollout_equality.config.checks import run_inputs

    config = copy.deepcopy(SHIPPED)
    config["suites"]["offline"][0].update(inputs=7)
    first = config["suites"]["offline"][0]
    assert run_inputs(config, first["model"], first["dataset"]) == 7
    assert run_inputs(config, "dinov2_large", "imagenet_val") is None  # all of the data set's n
    assert run_inputs(config, "no_model", "no_data") is None  # an experiment no suite lists


def test_an_experiments_analysis_is_resolved_by_one_function_for_the_workflow_and_the_command_line():
    """rule measure and ``rollout-equality measure`` both read experiment_analysis: a supervision study model gets
    the study's own settings, any other experiment its suites' (or ``analysis``'s own)."""
    from rollout_equality.config.checks import experiment_analysis, run_analysis
    from rollout_equality.config.supervision import model_name

    config = copy.deepcopy(SHIPPED)
    config["supervision"]["analysis"] = {"per_head": True, "fusions": ["mean", "min"]}
    study = model_name(config["supervision"]["objectives"][0], config["supervision"]["seeds"][0])
    assert experiment_analysis(config, study, config["supervision"]["test_data"]) == config["supervision"]["analysis"]
    assert experiment_analysis(config, "minilm", "pydoc_topics") == run_analysis(config, "minilm", "pydoc_topics")
    models_smk = (REPO / "workflow" / "rules" / "models.smk").read_text()
    assert "analysis=lambda w: experiment_analysis(config, w.model, w.dataset)" in models_smk
