"""The documents: the generated ones are current, every key of the schema is documented, every link, anchor and
image resolves, every figure's text reads at the size a page shows it, and no template or hand-written document of
docs/ types a number the kept outputs give, a commit, or what config.yaml states of a network source; docs/your-model.md
quotes refusals the code raises and pins the commits config.yaml pins.

README.md, docs/configuration.md, docs/results.md, docs/dynamics.md and docs/reproducing-the-paper.md are generated
by ``python -m tools.documents`` (tests/repository/test_documents.py tests the generator itself): a changed schema,
kept output, config or template fails here until it is run. README.md and docs/*.md are rendered once with
python-markdown and every local link and image in the HTML is checked.
"""

import functools
import re
import shlex
import struct
from pathlib import Path
from urllib.parse import unquote, urlparse

import markdown
import pytest
import yaml

from rollout_equality.config.schema import SCHEMA
from rollout_equality.reporting import figures
from tools import documents
from tools.documents import kept
from tools.documents.reproducing import INPUTS

REPO = kept.REPO
DOCUMENTS = [REPO / "README.md", REPO / "CHANGELOG.md", REPO / "benchmarks" / "README.md"] + sorted(
    (REPO / "docs").glob("*.md")
)
README_LINES = 150
README_WORDS = 600
COLUMN_PX = 880  # how wide GitHub (and the HTML of most renderers) shows a Markdown page's images at most
LEGIBLE_PX = 8  # the smallest text height that reads on a screen


@functools.cache
def values(name: str) -> dict[str, str]:
    """The values of the template of generated document ``name``, computed once per test session."""
    return documents.TEMPLATES[name][1]()


@pytest.mark.parametrize("name", sorted(documents.GENERATED))
def test_generated_documents_are_current(name):
    """Each generated document is what its template, filled in from the kept outputs and the config, gives now (an
    unfilled ``{name}`` of a template fails in the filling, naming it)."""
    now = documents.render(name, values(name)) if name in documents.TEMPLATES else documents.GENERATED[name]()
    assert (REPO / "docs" / name).read_text() == now, f"docs/{name} is stale: run `{documents.COMMAND}`"


def schema_keys(node: dict, path: str) -> list[str]:
    """The keys the schema spells out in place below ``node`` (``$ref``s are followed by their definitions, below):
    a mapping's keys, ``<name>`` for a mapping of named entries, ``[]`` for a list's items."""
    out = []
    for key, child in node.get("properties", {}).items():
        out += [f"{path}.{key}", *schema_keys(child, f"{path}.{key}")]
    if isinstance(node.get("additionalProperties"), dict):
        out += schema_keys(node["additionalProperties"], f"{path}.<name>")
    if isinstance(node.get("items"), dict):
        out += schema_keys(node["items"], f"{path}[]")
    for part in node.get("allOf", []):
        out += schema_keys(part, path)
    return out


def property_names(node) -> set[str]:
    """The name of every key anywhere in the schema (shared definitions and ``oneOf`` alternatives included)."""
    if isinstance(node, list):
        return set().union(*map(property_names, node)) if node else set()
    if not isinstance(node, dict):
        return set()
    names = set(node["properties"]) if isinstance(node.get("properties"), dict) else set()
    return names.union(*map(property_names, node.values()))


def test_configuration_documents_every_key_of_the_schema():
    """Every key of the schema has a row in docs/configuration.md: under its full path where the schema spells it
    out in place, and every key of a shared definition ($defs) or a ``oneOf`` alternative at least by its name."""
    text = (REPO / "docs" / "configuration.md").read_text()
    schema = yaml.safe_load(SCHEMA.read_text())
    for section, node in schema["properties"].items():
        assert f"## `{section}`" in text, section
        missing = [key for key in schema_keys(node, section) if f"| `{key}` |" not in text]
        assert missing == [], f"docs/configuration.md has no row for {missing}"
    rows = set(re.findall(r"^\| `(?:[^`]*\.)?([^.`]+)` \|", text, re.M))
    assert sorted(property_names(schema) - set(schema["properties"]) - rows) == [], "keys without a row"
    assert "| `extraction.batch_by_length` | boolean | `true` |" in text


# --- no number, commit or source fact typed by hand ----------------------------------------------------------------

NUMBER = re.compile(
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


def distinctive(numbers) -> set[str]:
    """The ``numbers`` (as written) with three significant digits or more: a copy of a measured value, not a round
    number that prose may state for its own reason (Wilson 95%, 1,000 classes, 1e-4)."""
    return {n for n in numbers if len(re.sub(r"\D", "", n).strip("0")) >= 3}


DATE = re.compile(r"\b\d{4}-\d\d-\d\d\b")
"""A day (a kept time's date, a measurement's day in prose): not a measured number."""


def typed_values(text: str, measured: set[str]) -> list[str]:
    """The numbers of ``text`` (its ``{name}``s left out) that are among the ``measured`` values."""
    return [n for n in NUMBER.findall(DATE.sub("", re.sub(r"\{[a-z0-9_]+\}", "", text))) if n in measured]


def test_typed_values_finds_a_pasted_measurement():
    measured = distinctive(NUMBER.findall("holds for 24.5% / 30.1%, 0.917 and 1.06–1.28 of 3,248; 95%, 1e-4, 1,000"))
    assert measured == {"24.5%", "30.1%", "0.917", "1.06–1.28", "3,248"}
    text = "Wilson 95% intervals; it holds for 24.5% ({rate}) of 3,248 matrices, 1,000 classes, 0.9170"
    assert typed_values(text, measured) == ["24.5%", "3,248"]
    assert typed_values("measured 2026-12-06, 3,248 of them", {"2026-12", "3,248"}) == ["3,248"]  # a day is no number


def hand_written() -> dict[str, str]:
    """The prose of docs/ written by hand: the templates (their ``{name}``s are filled in) and the documents that
    no template generates."""
    generated = {(REPO / "docs" / name).resolve() for name in documents.GENERATED}
    texts = {template: (REPO / "docs" / template).read_text() for template, _ in documents.TEMPLATES.values()}
    return texts | {p.name: p.read_text() for p in sorted((REPO / "docs").glob("*.md")) if p.resolve() not in generated}


def test_no_document_types_a_number_the_kept_outputs_give():
    """A template or hand-written document of docs/ never types a measured number that a ``{name}`` gives: one typed
    there would stay when the kept outputs change. Only the values the generator computes now are sought (three
    significant digits or more), so rewording or deleting prose cannot fail here."""
    given = " ".join(v for name in documents.TEMPLATES for v in values(name).values())
    measured = distinctive(NUMBER.findall(DATE.sub("", given)))
    assert len(measured) > 50  # the offline suite's and the dynamics study's numbers
    typed = {name: found for name, text in hand_written().items() if (found := typed_values(text, measured))}
    assert typed == {}, "type these as a {name} of the template"


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
    from rollout_equality.acquire.data import split_patterns
    from rollout_equality.acquire.sources import network_sources

    config = kept.load_config()
    facts: dict[str, list[str]] = {}
    for kind, name, spec in network_sources(config, list(config["suites"])):
        if kind == "models":
            hub = spec["hub"]
            facts[name] = [hub["id"], hub["revision"], hub["revision"][:8], hub["revision"][:12]]
        elif kind == "datasets":
            hf = spec["source"]["hf_dataset"]
            patterns = split_patterns(hf["data_files"], hf["split"]) if "data_files" in hf else []
            facts[name] = [hf["path"], hf["revision"], hf["revision"][:8], hf["revision"][:12], *patterns]
            facts[name] += [f"{spec['n']} {INPUTS[spec['modality']]}", f"n = {spec['n']}", f"seed {spec['seed']}"]
        elif "openml" in spec["source"]:
            facts[name] = [f"OpenML {spec['source']['openml']['id']}"]
    return facts


@pytest.mark.parametrize("name", sorted(documents.TEMPLATES))
def test_templates_type_no_pin_or_source_of_the_config(name):
    """A template types no commit and none of what config.yaml states of a network source (its id, pin, file
    patterns, input count, seed): a ``{name}`` fills it, so a changed pin changes every document."""
    template = documents.TEMPLATES[name][0]
    text = re.sub(r"\{[a-z0-9_]+\}", "", (REPO / "docs" / template).read_text())
    assert COMMIT_LIKE.findall(text) == [], f"{template} types these commits"
    typed = [f"{entry}: {fact}" for entry, facts in source_facts().items() for fact in facts if fact in text]
    assert typed == [], f"{template} types what config.yaml states"


def test_reproducing_the_paper_states_every_source_of_the_paper_suite():
    """docs/reproducing-the-paper.md has a row for each network source of the paper suite with its id, pin (12 hex
    digits), file patterns, input count and seed."""
    from rollout_equality.acquire.sources import network_sources

    doc = (REPO / "docs" / "reproducing-the-paper.md").read_text()
    facts = source_facts()
    for _, name, _ in network_sources(kept.load_config(), [kept.PAPER_SUITE]):
        row = next((line for line in doc.splitlines() if line.startswith(f"| `{name}` |")), None)
        assert row is not None, f"no row for {name}"
        assert [f for f in facts.get(name, []) if len(f) != 40 and not f.startswith("n = ") and f not in row] == [], (
            name
        )


# --- links, anchors, images and the figures' text --------------------------------------------------------------


def render(doc: Path) -> str:
    """``doc`` as HTML (python-markdown; headings get the ids GitHub gives them)."""
    return markdown.markdown(doc.read_text(), extensions=["tables", "fenced_code", "toc"])


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_and_image_resolves_and_figures_read_at_their_size(doc):
    """Every local link, anchor and image of ``doc`` resolves; the smallest text of every figure (figures.FONT_PT,
    drawn at figures.DPI) is at least LEGIBLE_PX tall at the width the page shows the figure."""
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
        smallest = min(figures.FONT_PT.values()) / 72 * figures.DPI * scale
        assert smallest >= LEGIBLE_PX, f"{src}: {width} px wide, its smallest text shows {smallest:.1f} px tall"
        assert height * scale <= 1200, f"{src}: {height * scale:.0f} px tall as shown"


def test_readme_is_short_and_points_to_the_documents():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= README_LINES
    words = len(re.sub(r"<!--.*?-->", "", text, flags=re.S).split())
    assert words <= README_WORDS, f"README.md has {words} words; keep it to {README_WORDS} (the rest lives in docs/)"
    for doc in (
        "docs/configuration.md", "docs/results.md", "docs/reproducing-the-paper.md", "docs/cluster.md",
        "docs/targets.md", "docs/outputs.md", "https://arxiv.org/abs/2610.05558",
    ):  # fmt: skip
        assert f"({doc})" in text, doc


# --- docs/your-model.md ------------------------------------------------------------------------------------------


def test_your_model_quotes_each_refusal_as_the_code_raises_it():
    """Each row of docs/your-model.md's table of refusals quotes a piece of a message the library or the command line
    raises (or logs, for the unpinned revision): a reworded message fails here until the document follows it."""
    text = (REPO / "docs" / "your-model.md").read_text().split("## What each refusal means", 1)[1]
    quoted = [re.match(r"\| `([^`]+)` \|", line).group(1) for line in text.splitlines() if line.startswith("| `")]
    quoted += re.findall(r"the log says `([^`]+)`", text)
    source = "\n".join(p.read_text() for p in sorted((REPO / "src" / "rollout_equality").rglob("*.py")))
    assert len(quoted) >= 30 and "is not pinned: resolved" in quoted
    assert [q for q in quoted if q not in source] == []


def test_documented_hub_commands_pin_the_commits_config_yaml_pins():
    """A command of the documents that reads a hub id at `--revision COMMIT` pins the commit config.yaml pins for that
    repository: the documents' examples move with the config's pins (which `snakemake check_sources` checks)."""
    from documented import documented_commands

    pins = {m["hub"]["id"]: m["hub"]["revision"] for m in kept.load_config()["models"].values() if "hub" in m}
    shown = [
        shlex.split(c)
        for c in documented_commands()
        if "--revision" in c and c.removeprefix(".venv/bin/").startswith("rollout-equality")
    ]
    pinned = {w[w.index("--model") + 1]: w[w.index("--revision") + 1] for w in shown}
    assert pinned and all(re.fullmatch(r"[0-9a-f]{40}", r) for r in pinned.values())
    assert {repo: pins.get(repo) for repo in pinned} == pinned


# --- files the documents name ------------------------------------------------------------------------------------

NAMING = [
    *(d for d in DOCUMENTS if d.name != "CHANGELOG.md"),  # the history names files as they were
    REPO / "config.yaml",
    REPO / ".test/config.yaml",
    *sorted((REPO / "profiles").glob("*/config.yaml")),
    *sorted((REPO / "overlays").glob("*.yaml")),
    REPO / "Snakefile",
    *sorted((REPO / "requirements").glob("*.in")),
    REPO / "requirements/offline-data.txt",
    REPO / "CITATION.cff",
]
"""The documents and the commented files whose named paths must exist."""
NOT_IN_THE_CHECKOUT = {
    "profiles/default": "the profile Snakemake would apply by itself; the documents say why none ships"
}
TOP = (
    "src",
    "tests",
    "docs",
    "benchmarks",
    "tools",
    "workflow",
    "profiles",
    "overlays",
    "requirements",
    "envs",
    "paper",
)
PATH = re.compile(
    r"(?<![\w./~$-])((?:\.\./)*(?:\.test|\.ci|" + "|".join(TOP) + r")/[\w./<>{}*?@-]*[\w>}*/])(?:::\w+)?"
    r"|(?<![\w./~$-])((?:\.\./)*(?:config\.yaml|Snakefile|pyproject\.toml|CITATION\.cff|CHANGELOG\.md|LICENSE))(?![\w-]|\.\w)"
)


def named_paths(text: str) -> list[str]:
    """The repository paths ``text`` names (in code spans, prose or comments): under a top-level folder of the
    checkout, or one of its top-level files; a path with a placeholder (``<name>``, ``{x}``, ``*``) up to it."""
    found = []
    for match in PATH.finditer(text):
        path = match.group(1) or match.group(2)
        path = re.split(r"[<{*?]", path)[0]
        found.append(path.rstrip("./") if path.endswith(".") else path)
    return [p for p in found if p]


def missing_paths(doc: Path, text: str | None = None) -> list[str]:
    """The paths ``doc`` names (:func:`named_paths`, relative to the checkout, or to the document where it starts with
    ``../``) that are neither in the checkout nor what a run writes (a path .gitignore ignores)."""
    import subprocess

    missing = []
    for path in named_paths(doc.read_text() if text is None else text):
        where = (doc.parent / path) if path.startswith("../") else (REPO / path)
        if where.exists() or path.rstrip("/") in NOT_IN_THE_CHECKOUT:
            continue
        ignored = [  # as a file, or as a folder (a pattern may name folders only)
            subprocess.run(["git", "check-ignore", "-q", "--no-index", name], cwd=REPO).returncode == 0
            for name in (str(where), str(where) + "/")
        ]
        if not any(ignored):
            missing.append(path)
    return sorted(set(missing))


@pytest.mark.parametrize("doc", NAMING, ids=lambda p: str(p.relative_to(REPO)))
def test_every_file_a_document_names_exists(doc):
    """A path a document or a config comment names is in the checkout, or is what a run writes (.gitignore says which):
    a renamed or deleted file fails here until the document follows it."""
    assert missing_paths(doc) == []


def test_named_paths_finds_a_missing_file_and_spares_a_run_s_outputs():
    text = (
        "`tests/test_environment.py` holds it; `tests/runtime/test_lock.py::test_x` too; see benchmarks/README.md, "
        "`results/records/<model>/x.parquet`, `resources/`, profiles/site, docs/offline/*.csv and config.yaml."
    )
    assert named_paths(text) == [
        "tests/test_environment.py",
        "tests/runtime/test_lock.py",
        "benchmarks/README.md",
        "profiles/site",
        "docs/offline/",
        "config.yaml",
    ]
    assert missing_paths(REPO / "README.md", text) == ["tests/test_environment.py"]


def test_commands_are_written_with_the_environment_s_programs():
    """Every documented command runs a program of the locked environment as `.venv/bin/<program>` (README's install
    makes it), but the lines that make that environment (`git clone`, `python3 -m venv`) and a config override."""
    from documented import documented_commands

    bare = {
        command: where
        for command, where in documented_commands().items()
        if not command.startswith((".venv/bin/", "git clone ", "python3 -m venv ", "--config"))
    }
    assert {c: where for c, where in bare.items() if where} == {}
