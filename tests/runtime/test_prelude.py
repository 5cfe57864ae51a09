"""One job prelude (rollout_equality.runtime.prelude): every rule's script calls it first, but the downloads'."""

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
        if isinstance(node, ast.ImportFrom) and node.module != "rollout_equality.runtime.prelude":
            before.append(node.module)
        if isinstance(node, ast.Import):
            before += [a.name for a in node.names if a.name != "_checkout"]
    return None, before


SCRIPTED = {name: paths["script"] for name, paths in rules().items() if paths["script"]}
DOWNLOADS = {"check_network_sources", "report_sources", "prepare_model", "prepare_data", "fetch_table"}
"""The rules that reach the network: local rules (the submitting host has the network), never offline. The other
local rules (tables, figures, the paper: seconds of work) go offline as the compute jobs do."""


@pytest.mark.parametrize("rule", sorted(SCRIPTED))
def test_every_rule_runs_the_prelude_first_but_the_downloads(rule):
    call, before = prelude_call(SCRIPTED[rule])
    if rule in DOWNLOADS:
        assert rule in localrules(), f"{rule} downloads: it must be a local rule (compute nodes may have no network)"
        assert call is None, f"{rule} downloads: its script must not go offline"
        return
    assert call is not None, (
        f"rule {rule}: {SCRIPTED[rule].name} does not call rollout_equality.runtime.prelude.prelude"
    )
    assert not [m for m in before if m and m.startswith("rollout_equality")], f"{rule}: library imported first"
    arguments = [ast.unparse(a) for a in call.args]
    fixed = {  # rules whose bits depend on torch's threads and code path run on those the config fixes
        "measure": ["snakemake.threads", "snakemake.params.extraction['code_path']"],
        "train_ftt": ["snakemake.params.training['threads']", "snakemake.params.training['code_path']"],
        "measure_ftt": ["snakemake.params.training['threads']", "snakemake.params.training['code_path']"],
        "unroll_albert": ["snakemake.params.threads", "snakemake.params.code_path"],
        "init_supervision": ["snakemake.params.threads", "snakemake.params.code_path"],  # config supervision's
        "train_supervision": ["snakemake.params.threads", "snakemake.params.code_path"],
        "report_supervision": ["1"],  # the k-NN's small forward passes, on one thread
    }
    assert arguments == fixed.get(rule, ["snakemake.threads"]), arguments


def test_the_prelude_sets_offline_and_thread_counts_in_a_fresh_process():
    code = (
        "import os, json, torch\n"
        "from rollout_equality.runtime.prelude import prelude\n"
        "prelude(3)\n"
        "import numba\n"
        "keys = ('HF_HUB_OFFLINE', 'HF_DATASETS_OFFLINE', 'OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_DYNAMIC',\n"
        "        'OMP_DYNAMIC')\n"
        "print(json.dumps([torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS, [os.environ[k] for k in keys]]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS") and "OFFLINE" not in k}
    env["MKL_DYNAMIC"] = "TRUE"  # a job's environment that lets MKL choose fewer threads: the prelude takes it back
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [3, 3, ["1", "1", "3", "3", "FALSE", "FALSE"]]


def test_the_prelude_refuses_to_run_after_numba_is_imported():
    code = "import numba\nfrom rollout_equality.runtime.prelude import prelude\nprelude(2)\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode != 0 and "numba imported before the job prelude" in res.stderr


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"])
def test_the_prelude_refuses_a_bad_thread_count(threads):
    from rollout_equality.runtime.prelude import prelude

    with pytest.raises(ValueError, match="at least 1 thread"):
        prelude(threads)


def test_the_prelude_fixes_the_cpu_code_path_before_torch_starts():
    """compatible: torch's ATen kernels at the default capability, MKL's COMPATIBLE branch, oneDNN's SSE4.1, numba's
    generic x86-64; a variable of another code path set by the environment is removed; native leaves the
    environment's choice alone."""
    code = (
        "import json, os\n"
        "from rollout_equality.runtime.prelude import prelude\n"
        "import sys\n"
        "prelude(1, sys.argv[1])\n"
        "import torch\n"
        "keys = ('ATEN_CPU_CAPABILITY', 'MKL_CBWR', 'ONEDNN_MAX_CPU_ISA', 'NUMBA_CPU_NAME')\n"
        "print(json.dumps([torch.backends.cpu.get_cpu_capability(), [os.environ.get(k) for k in keys]]))\n"
    )
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX512_CORE", "ATEN_CPU_CAPABILITY": "avx2"}
    env.pop("MKL_CBWR", None)
    env.pop("NUMBA_CPU_NAME", None)
    found = {}
    for name in ("compatible", "avx2", "native"):
        res = subprocess.run([sys.executable, "-c", code, name], capture_output=True, text=True, env=env)
        assert res.returncode == 0, res.stderr
        found[name] = json.loads(res.stdout)
    assert found["compatible"] == ["DEFAULT", ["default", "COMPATIBLE", "SSE41", "generic"]]
    assert found["avx2"] == ["AVX2", ["avx2", "AVX2", "AVX2", "haswell"]]
    assert found["native"] == ["AVX2", ["avx2", None, "AVX512_CORE", None]]  # the environment's, untouched


@pytest.mark.parametrize("first", ["torch", "numba", "rollout_equality.condition.kernels"])
def test_the_code_path_is_refused_once_torch_numba_or_the_kernels_have_started_and_when_unknown(first):
    code = f"import {first}\nfrom rollout_equality.runtime.prelude import code_path\ncode_path('compatible')\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode != 0 and f"{first} imported before code_path 'compatible'" in res.stderr
    from rollout_equality.runtime.code_paths import code_path

    with pytest.raises(ValueError, match="code_path must be one of"):
        code_path("sse2")


EXIT_PROGRAM = """
import gc, logging, sys
gc.disable()  # no collection before the exit's own
from rollout_equality.runtime.prelude import exit_without_final_sweep
if sys.argv[1] == "on":
    exit_without_final_sweep()
class Cycle:
    def __del__(self):
        print("swept", flush=True)
cycle = Cycle(); cycle.self = cycle; del cycle
handler = logging.FileHandler(sys.argv[2], mode="w")  # left open: logging's atexit hook flushes and closes it
logging.getLogger("job").addHandler(handler)
logging.getLogger("job").warning("written")
"""


@pytest.mark.parametrize("on", [True, False])
def test_a_job_exits_without_the_collectors_last_sweep_and_keeps_its_log(tmp_path, on):
    """exit_without_final_sweep (every workflow script calls it through _checkout): at exit the collector sweeps
    nothing more (an object left in a cycle is not finalised; without the call it is), and the atexit hooks still
    run (a log handler left open is flushed)."""
    log = tmp_path / "job.log"
    args = [sys.executable, "-c", EXIT_PROGRAM, "on" if on else "off", str(log)]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    assert ("swept" in done.stdout) is not on, done.stdout
    assert log.read_text() == "written\n"


def test_every_workflow_script_imports_the_checkout_module_before_the_library():
    """_checkout sets the path and the exit (above): a script without it would run the installed library and sweep at
    exit."""
    for script in sorted(set(SCRIPTED.values())):
        imported = []
        for node in ast.parse(script.read_text()).body:
            if isinstance(node, ast.Import):
                imported += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                imported.append(node.module)
        assert "_checkout" in imported, f"{script.name} does not import _checkout"
        library = [i for i, name in enumerate(imported) if name.startswith("rollout_equality")]
        assert not library or imported.index("_checkout") < library[0], f"{script.name}: _checkout after the library"
