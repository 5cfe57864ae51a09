"""The documents: generated ones are current, every link and image resolves, every figure reads at its size.

docs/configuration.md is generated from the schema and docs/results.md from the offline suite's tables
(docs/offline, docs/ftt_ablation) by docs/update.py: a changed schema, table or template fails here until
`python docs/update.py` is run. README.md and docs/*.md are rendered once with python-markdown and every
local link and image in the HTML is checked.
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


def test_results_fill_every_name_from_the_tables():
    template = (REPO / "docs" / "results.in.md").read_text()
    names = set(re.findall(r"(?<!\{)\{([a-z0-9_]+)\}(?!\})", template))
    values = update.results_values()
    assert names <= set(values) and names, sorted(names - set(values))
    assert not re.search(r"\{[a-z0-9_]+\}", update.results_md().replace("{max_epochs", ""))


def test_configuration_lists_every_key_of_the_schema():
    import yaml

    text = (REPO / "docs" / "configuration.md").read_text()
    schema = yaml.safe_load(update.SCHEMA.read_text())
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
