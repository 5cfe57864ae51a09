"""One job prelude (rollout_equality.job): every compute rule's script calls it first; the local rules' never."""

import ast
import json
import os
import subprocess
import sys

import pytest
from workflow_rules import localrules, rules


def prelude_call(script) -> tuple[ast.Call | None, list[str]]:
    """The script's top-level ``prelude(...)`` call and the library modules it imports before that call."""
    before = []
    for node in ast.parse(script.read_text()).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            if getattr(node.value.func, "id", None) == "prelude":
                return node.value, before
        if isinstance(node, ast.ImportFrom) and node.module != "rollout_equality.job":
            before.append(node.module)
        if isinstance(node, ast.Import):
            before += [a.name for a in node.names if a.name != "_checkout"]
    return None, before


SCRIPTED = {name: paths["script"] for name, paths in rules().items() if paths["script"]}


@pytest.mark.parametrize("rule", sorted(SCRIPTED))
def test_every_compute_rule_runs_the_prelude_first_and_no_local_rule_does(rule):
    call, before = prelude_call(SCRIPTED[rule])
    if rule in localrules():
        assert call is None, f"{rule} is a local rule (it downloads): its script must not go offline"
        return
    assert call is not None, f"rule {rule}: {SCRIPTED[rule].name} does not call rollout_equality.job.prelude"
    assert not [m for m in before if m and m.startswith("rollout_equality")], f"{rule}: library imported first"
    threads = ast.unparse(call.args[0])
    fixed = {  # rules whose bits depend on torch's thread count run on the count the config fixes
        "train_ftt": "snakemake.params.training['threads']",
        "measure_ftt": "snakemake.params.training['threads']",
        "unroll_albert": "snakemake.params.threads",
    }
    assert threads == fixed.get(rule, "snakemake.threads"), threads


def test_the_prelude_sets_offline_and_thread_counts_in_a_fresh_process():
    code = (
        "import os, json, torch\n"
        "from rollout_equality.job import prelude\n"
        "prelude(3)\n"
        "import numba\n"
        "keys = ('HF_HUB_OFFLINE', 'HF_DATASETS_OFFLINE', 'OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS')\n"
        "print(json.dumps([torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS, [os.environ[k] for k in keys]]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS") and "OFFLINE" not in k}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [3, 3, ["1", "1", "3", "3"]]


def test_the_prelude_refuses_to_run_after_numba_is_imported():
    code = "import numba\nfrom rollout_equality.job import prelude\nprelude(2)\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode != 0 and "numba imported before the job prelude" in res.stderr


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"])
def test_the_prelude_refuses_a_bad_thread_count(threads):
    from rollout_equality.job import prelude

    with pytest.raises(ValueError, match="at least 1 thread"):
        prelude(threads)
