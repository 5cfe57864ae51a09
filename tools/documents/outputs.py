"""docs/outputs.md: where every output lands, and the records' columns from their Arrow schemas
(:data:`rollout_equality.condition.records.SCHEMAS`) and their meanings
(:data:`~rollout_equality.condition.records.COLUMNS`)."""

from __future__ import annotations

from tools.documents.kept import REPO
from tools.documents.wording import and_, markdown_table, sig, sig_span

FINGERPRINT = REPO / "benchmarks" / "fingerprint.json"
"""benchmarks/fingerprint.py's kept fingerprint (:mod:`rollout_equality.fingerprint`)."""
COMPATIBLE = REPO / "docs" / "offline" / "compatible"
"""The kept run of the offline suite with overlays/compatible.yaml: its tables, the SHA-256 of its trainings and each
epoch's weights (``ftt_trainings.json``) and the compatible path's fingerprint of its machine (``fingerprint.json``),
both written by ``benchmarks/trainings.py --write``."""
CODE_PATHS_CSV = REPO / "benchmarks" / "code_paths.csv"
"""benchmarks/code_paths.py's comparison of forced CPU code paths (``--csv``), kept."""
LIBRARIES = {"aten": "torch's kernels", "mkl": "MKL's branch", "onednn": "oneDNN's ISA", "numba": "numba's target"}
"""The prefix of a benchmark variant that forces one library alone, and how the document names that library."""


def records_table() -> str:
    """One row per column of the records files: its name, Arrow type, which file holds it, what it means."""
    from rollout_equality.condition.records import COLUMNS, SCHEMAS

    names = list(dict.fromkeys(name for schema in SCHEMAS.values() for name in schema.names))
    missing = [name for name in names if name not in COLUMNS]
    if missing:
        raise ValueError(f"rollout_equality.condition.records.COLUMNS says nothing of the columns {', '.join(missing)}")
    rows = []
    for name in names:
        holding = {label: s for label, s in SCHEMAS.items() if name in s.names}
        types = {str(s.field(name).type) for s in holding.values()}
        where = ", ".join(holding)
        rows.append((f"`{name}`", " / ".join(sorted(types)), where, COLUMNS[name]))
    return "\n".join(markdown_table(("column", "type", "records", "what it holds"), rows))


def reproducibility_values() -> dict[str, str]:
    """The measured differences docs/outputs.md states, from the kept :data:`CODE_PATHS_CSV`."""
    import pandas as pd

    runs = pd.read_csv(CODE_PATHS_CSV, keep_default_na=False)
    native = runs.iloc[0]
    other = runs[runs["variant"].str.startswith(tuple(LIBRARIES) + ("code_path_",))]
    alone = runs[runs["variant"].str.startswith(tuple(LIBRARIES))]
    library = alone["variant"].str.split("_").str[0]
    moved = sorted({LIBRARIES[k] for k in library[alone["ftt_weights"] == "other"]})
    unmoved = sorted({LIBRARIES[k] for k in library} - set(moved))
    subjects = [c.removesuffix("_rows") for c in runs.columns if c.endswith("_rows")]
    compatible = runs[runs["variant"] == "code_path_compatible"].iloc[0]

    def largest(column: str) -> str:
        return sig(max(other[f"{s}_{column}"].max() for s in subjects), 1)

    return {
        "machine": f"an {native['cpu']} whose native torch kernels are {native['aten']}, on {native['threads']} threads",
        "ftt_moved": and_(moved),
        "ftt_unmoved": and_(unmoved) if unmoved else "no other library",
        "ftt_dw": sig(alone["ftt_max_dw"].max(), 1),
        "ftt_steps": f"{native['ftt_steps']} steps",
        "attn": largest("max_dattn"),
        "kappa": largest("max_dkappa"),
        "rollout": largest("max_dkappa_rollout"),
        "flips": str(sum(int(other[f"{s}_flips"].sum()) for s in subjects)),
        "rows": f"{sum(int(other[f'{s}_rows'].sum()) for s in subjects):,}",
        "measure_cost": sig_span([compatible[f"{s}_cpu"] for s in subjects], 2) + "×",
    }


def fingerprint_values() -> dict[str, str]:
    """The machine of the kept fingerprint and where its native and compatible paths first part."""
    import json

    kept = json.loads(FINGERPRINT.read_text())
    machine = kept["machine"]
    lock = machine.get("lock", "no lock")
    departed = " (an environment departing from it)" if machine.get("departures_from_the_lock") else ""
    native, compatible = (kept["paths"][p]["digests"] for p in ("native", "compatible"))
    parted = [i for i, (a, b) in enumerate(zip(native, compatible)) if a != b]
    if not parted:
        raise ValueError(f"{FINGERPRINT}: its native and compatible paths give the same digests")
    part, op, _ = native[parted[0]]
    return {
        "fingerprint_machine": f"an {machine['cpu']}, torch's native kernels {machine['native_capability']}, "
        f"lock `{lock[:19]}…`{departed}",
        "fingerprint_first": f"`{part}, {op}`, digest {parted[0] + 1} of {len(native)} (every one before it the "
        "prepared table's)"
        if all(row[0] == "inputs" for row in native[: parted[0]])
        else f"`{part}, {op}`, digest {parted[0] + 1} of {len(native)}",
    }


def compatible_values() -> dict[str, str]:
    """What the compatible code path gave across processor families: the kept fingerprint of :data:`FINGERPRINT`
    against the one kept in :data:`COMPATIBLE` (another machine's), and the kept trainings."""
    import json

    from rollout_equality.fingerprint import compare

    kept, other = (json.loads(p.read_text()) for p in (FINGERPRINT, COMPATIBLE / "fingerprint.json"))
    verdict = compare(kept, other)["compatible"]
    if verdict != "same as kept":
        raise ValueError(f"{COMPATIBLE / 'fingerprint.json'} against {FINGERPRINT}, compatible path: {verdict}")
    cpus = [kept["machine"]["cpu"], other["machine"]["cpu"]]
    if cpus[0] == cpus[1]:
        raise ValueError(f"{FINGERPRINT} and {COMPATIBLE / 'fingerprint.json'} were made on one kind of CPU: {cpus[0]}")
    trainings = json.loads((COMPATIBLE / "ftt_trainings.json").read_text())
    return {
        "compatible_machines": f"an {cpus[0]} and an {cpus[1]}",
        "compatible_digests": f"{len(other['paths']['compatible']['digests']):,}",
        "compatible_steps": f"{other['steps']}",
        "trainings_count": f"{len(trainings['trainings'])}",
        "trainings_machine": f"an {trainings['machine']['cpu']}",
    }


def compare_values() -> dict[str, str]:
    """The settings of `rollout-equality compare` (:mod:`rollout_equality.reporting.compare`) and the number of tests its
    correction spans for the tables kept in docs/offline/."""
    from rollout_equality.reporting.compare import ALPHA, ROUNDING_ATOL, compare
    from tools.documents.kept import OFFLINE

    return {
        "compare_alpha": f"{ALPHA:g}",
        "compare_atol": f"{ROUNDING_ATOL:g}",
        "compare_tests": f"{compare(OFFLINE, OFFLINE).n_tests:,}",
    }


def outputs_values() -> dict[str, str]:
    """Every ``{name}`` of docs/outputs.in.md."""
    return {
        "records_columns": records_table(),
        **reproducibility_values(),
        **fingerprint_values(),
        **compatible_values(),
        **compare_values(),
    }
