"""The command line says what it is: `--version` (the package's version, the lock's digest), every subcommand's
--help (a description, examples its parser accepts), `--log` (where a command's messages go)."""

import argparse
import json
import shlex

import numpy as np
import pytest
from conftest import REPO

import rollout_equality
from rollout_equality import cli
from rollout_equality.cli import build_parser, main
from rollout_equality.runtime.lock import checkout_lock, lock_digest


def subcommands() -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def examples(parser: argparse.ArgumentParser) -> list[str]:
    """The command lines of a subcommand's --help, under ``examples:``."""
    block = parser.epilog.split(cli.EXAMPLES, 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip()]


def test_version_prints_the_packages_version_and_the_digest_of_the_checkouts_lock(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"rollout-equality {rollout_equality.__version__}"
    assert checkout_lock() == REPO / "requirements" / "lock.txt"
    assert out[1] == f"lock: {lock_digest(REPO / 'requirements' / 'lock.txt')} ({REPO / 'requirements' / 'lock.txt'})"
    assert out[2].startswith("this environment: ")


def test_version_outside_a_checkout_says_there_is_no_lock_beside_it(monkeypatch):
    """An installed wheel has no requirements/lock.txt beside it (tests/repository/test_wheel.py runs the real one)."""
    monkeypatch.setattr("rollout_equality.runtime.lock.checkout_lock", lambda: None)
    text = cli.version()
    assert text.splitlines()[0] == f"rollout-equality {rollout_equality.__version__}"
    assert "lock: none beside this installation" in text


def test_version_says_where_this_environment_departs_from_the_lock(monkeypatch):
    monkeypatch.setattr(
        "rollout_equality.runtime.lock.differences", lambda lock, also: ["torch: 2.11.0 installed, 2.14.1 locked"]
    )
    assert "departs from the lock in 1 distributions: torch: 2.11.0 installed, 2.14.1 locked" in cli.version()


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_every_subcommand_has_a_description_and_examples_its_parser_accepts(name):
    parser = subcommands()[name]
    assert parser.description and len(parser.description.split()) >= 20, name
    shown = parser.format_help()
    assert "examples:\n  rollout-equality " + name in shown
    found = examples(parser)
    assert found, name
    for line in found:
        words = shlex.split(line)
        assert words[:2] == ["rollout-equality", name], line
        args = build_parser().parse_args(words[1:])  # exits (SystemExit) on an argument the parser refuses
        assert args.command == name


@pytest.mark.parametrize("name", ["baseline", "prepare", "measure", "check-sources"])
def test_log_is_documented_in_every_subcommand_that_takes_it(name):
    shown = " ".join(subcommands()[name].format_help().split())
    assert "--log FILE append the command's messages to this file, as a rule writes its log: file" in shown


def test_the_condition_examples_run_as_its_help_shows_them(tmp_path, monkeypatch, capsys):
    """The files its epilog describes, made: a matrix (.npy), a matrix as CSV, and a stack of bfloat16 attention saved
    as float32, refused at the default tolerance naming how to proceed and accepted at bfloat16's epsilon."""
    import torch

    monkeypatch.chdir(tmp_path)
    A = np.array([[0.6, 0.4, 0.0], [0.2, 0.5, 0.3], [0.0, 0.3, 0.7]])
    np.save("matrix.npy", A)
    np.savetxt("attention.csv", A, delimiter=",")
    g = torch.Generator().manual_seed(0)
    stack = torch.randn(4, 9, 9, generator=g).softmax(dim=-1).to(torch.bfloat16).float().numpy()
    np.save("layers.npy", stack)
    codes = {}
    for line in examples(subcommands()["condition"]):
        codes[line] = main(shlex.split(line)[1:])
        out = capsys.readouterr().out
        if codes[line] == 0:
            result = json.loads(out)
            assert set(result) >= {"holds", "holds_direct", "kappa", "witness_i"}
    assert set(codes.values()) == {0}, codes
    assert main(["condition", "layers.npy"]) == 2
    assert "half precision strays by up to its machine epsilon" in capsys.readouterr().err


def test_log_sends_a_commands_messages_to_the_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["baseline", "--n", "3", "--trials", "20", "--seed", "0", "--out", "b.csv", "--log", "b.log"]) == 0
    log = (tmp_path / "b.log").read_text()
    assert "random baseline" in log and "INFO rollout_equality.condition.baseline: n=3:" in log  # progress, result
    assert "random baseline" not in capsys.readouterr().err
    spec = {"modality": "text", "source": {"pydoc_topics": True}, "n": 2, "seed": 0}
    assert main(["prepare", "pydoc", json.dumps(spec), "--out", "data/pydoc", "--log", "p.log"]) == 0
    assert (tmp_path / "data/pydoc/manifest.json").is_file() and (tmp_path / "p.log").is_file()
    assert main(["prepare", "pydoc", json.dumps({**spec, "n": 10**6}), "--out", "data/big", "--log", "p.log"]) == 2
    assert "asked for n = 1000000 segments" in (tmp_path / "p.log").read_text()  # a failure's traceback too
