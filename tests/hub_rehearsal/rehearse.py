"""Rehearse ``snakemake check_sources`` → ``download`` → ``all`` → ``dynamics`` against replicas of the paper's sources.

By hand (a few minutes on 2 cores; outputs under DIR, never in the project's results/):

    .venv/bin/python tests/hub_rehearsal/rehearse.py /tmp/rehearsal

builds the replicas (:mod:`replicas`), serves them with olah (:mod:`mirror`), writes
DIR/config.yaml — the shipped config.yaml with only the revisions (the replicas' commits) and the
sizes changed, plus one model added to its paper suite (dinov2-giant at ``main``, the entry of docs/configuration.md's overlay) — and runs the
workflow in DIR with HF_ENDPOINT pointing at the mirror. The weights are random: the outputs
prove loading, layout and plumbing, never the paper's numbers (DIR/REHEARSAL.md says so).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hub_rehearsal import mirror, replicas  # noqa: E402

NOTICE = """# A rehearsal, not a result

Everything under this directory was produced by tests/hub_rehearsal against replicas of the
paper's sources: real repository ids, layouts, configurations and tokenizers, but tiny random
weights, synthetic California Housing values, a tenth of each table's rows and a handful of inputs. It proves that the
pipeline loads, lays out and plumbs the real sources; its rates and scores say nothing about
trained transformers and must never be reported.
"""

TABLE_EVERY = 10
"""The tables' replicas and the ablation's UCI Adult files hold every 10th row (4,885 of OpenML Adult's, 2,064
California rows, 3,257 + 1,629 of UCI Adult's): FT-Transformer's epoch on all of them was most of the rehearsal's
time, and its scores are not what the rehearsal shows."""

SWAP_MODEL = {
    "backend": "transformers",
    "modality": "image",
    "hub": {"id": "facebook/dinov2-giant", "revision": "main"},
}


def rehearsal_config(
    shipped: dict, commits: dict[str, str], *, add_giant: bool = True, uci_adult: tuple[Path, Path] | None = None
) -> dict:
    """The shipped config with the replicas' commits as revisions and small sizes.

    Changed: every hub revision (pinned commits cannot exist on a replica), the number of
    inputs of the hub data sets (4), baseline trials (200), FT-Transformer seeds (one),
    epochs (1) and test rows measured (20), the recipe ablation (two settings, one seed, one
    epoch; its UCI Adult files ``uci_adult`` (data, test) when given: a tenth of the rows,
    :data:`TABLE_EVERY`), and the simulations' lengths. With ``add_giant``, a
    model the suite does not list joins the paper suite as the README tells users to do it.
    """
    cfg = copy.deepcopy(shipped)
    for spec in cfg["models"].values():
        if "hub" in spec:
            spec["hub"]["revision"] = commits[f"models/{spec['hub']['id']}"]
    for spec in cfg["datasets"].values():
        hf = spec["source"].get("hf_dataset")
        if hf:
            hf["revision"] = commits[f"datasets/{hf['path']}"]
            spec["n"] = 4
    cfg.setdefault("baseline", {})["trials"] = 200  # the shipped file may leave a section to the schema's defaults
    cfg.setdefault("extraction", {})["batch_size"] = 4
    tab = cfg["tabular"]
    tab.update(seeds=[0], n_inputs=20)
    tab["training"].update(max_epochs=1, patience=1)
    for name in tab["suites"]["paper"]:
        tab["datasets"][name].pop("seeds", None)
        tab["datasets"][name].pop("training", None)
    if uci_adult is not None:
        tab["datasets"][tab["ablation"]["table"]]["source"]["csv"].update(
            path=str(uci_adult[0]), test_path=str(uci_adult[1])
        )
    ablation = tab[
        "ablation"
    ]  # the paper suite shows it (overlays/ftt_ablation.yaml): two settings, one seed, one epoch
    ablation.update(yaml.safe_load((REPO / "overlays/ftt_ablation.yaml").read_text())["tabular"]["ablation"])
    ablation.update(seeds=[0], training={"max_epochs": 1, "patience": 1})
    ablation["settings"] = {k: ablation["settings"][k] for k in ("reference", "no_quantile_noise")}
    for sim in cfg["dynamics"]["simulations"].values():
        sim["steps"] = min(sim["steps"], 40)
    cfg["dynamics"]["simulations"]["bipartite"].update(radii=[0.1, 1.5], trials=4, uniform_starts=4, betas=[0.5, 1.0])
    if add_giant:
        cfg["models"]["dinov2_giant"] = copy.deepcopy(SWAP_MODEL)
        cfg["suites"]["paper"].append({"model": "dinov2_giant", "dataset": "imagenet_val"})
    return cfg


def prepare(workdir: str | os.PathLike, *, add_giant: bool = True) -> dict[str, str]:
    """Build the replicas under ``workdir/mirror``, the caches under ``workdir/resources/cache`` and
    write ``workdir/config.yaml``; return the replicas' commits."""
    workdir = Path(workdir)
    commits = replicas.build_mirror(workdir / "mirror")
    replicas.build_caches(workdir / "resources" / "cache", every=TABLE_EVERY)
    uci_adult = replicas.uci_adult_files(workdir / "resources" / "cache" / "uci_adult", TABLE_EVERY)
    shipped = yaml.safe_load((REPO / "config.yaml").read_text())
    cfg = rehearsal_config(shipped, commits, add_giant=add_giant, uci_adult=uci_adult)
    (workdir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    (workdir / "REHEARSAL.md").write_text(NOTICE)
    (workdir / "paper").mkdir(exist_ok=True)  # the `paper` target builds paper/main.tex of the working directory
    shutil.copy(REPO / "paper" / "main.tex", workdir / "paper" / "main.tex")
    return commits


def environment(workdir: str | os.PathLike, endpoint: str | None) -> dict[str, str]:
    """The clients' environment: the mirror as the hub (None: no hub at all, HF_HUB_OFFLINE=1), a private HF_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(HF_HOME=str(Path(workdir) / "hf_home"), HF_HUB_DISABLE_TELEMETRY="1", SOURCE_DATE_EPOCH="0")
    if endpoint is None:
        env.update(HF_HUB_OFFLINE="1", HF_ENDPOINT="http://127.0.0.1:9")  # nothing listens on the discard port
    else:
        env["HF_ENDPOINT"] = endpoint
    return env


def python(code: str, env: dict[str, str], cwd: str | os.PathLike, *args: str, timeout: float = 600) -> dict:
    """Run ``code`` in a fresh interpreter with ``env`` (and ``sys.argv[1:] = args``); it prints one JSON object last."""
    res = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def snakemake(
    workdir: str | os.PathLike, env: dict[str, str], *args: str, timeout: int = 1800
) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(Path(workdir) / "config.yaml"),
        "--cores",
        "2",
        *args,
    ]
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdir", help="an empty directory for the replicas, the caches and the outputs")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"building replicas under {workdir / 'mirror'} ...", flush=True)
    prepare(workdir)
    targets = ["all", "dynamics"] + (["paper"] if shutil.which("latexmk") else [])
    with mirror.serve(workdir / "mirror", workdir / "olah") as endpoint:
        env = environment(workdir, endpoint)
        for step in (["check_sources"], ["download"], targets):
            print(f"HF_ENDPOINT={endpoint} snakemake {' '.join(step)} ...", flush=True)
            res = snakemake(workdir, env, *step)
            if res.returncode:
                print(res.stdout[-5000:] + res.stderr[-5000:])
                return res.returncode
    print("again, HF_HUB_OFFLINE=1 and no hub: snakemake download --forcerun (from disk) ...", flush=True)
    res = snakemake(
        workdir, environment(workdir, None), "download", "--forcerun", "prepare_model", "prepare_data", "fetch_table"
    )
    print(res.stderr[-3000:] if res.returncode else f"done: outputs under {workdir} (see REHEARSAL.md)")
    return res.returncode


if __name__ == "__main__":
    raise SystemExit(main())
