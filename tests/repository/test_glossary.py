"""docs/glossary.md defines each term the documents use, and the documents link a term there at its first use.

The list of terms lives in one place: the glossary's ``###`` headings. A term is *defined* when its heading is followed
by one or two sentences (tests/prose.py's measure) of its own. The documents must not point at a term the glossary
does not define, and README.md and docs/results.md link every term they use at its first use (FIRST_USE_LINKED)."""

import re

import markdown
import pytest
from conftest import REPO
from prose import sentences

GLOSSARY = REPO / "docs" / "glossary.md"
FIRST_USE_LINKED: dict[str, str | None] = {"README.md": None, "docs/results.md": None}
"""The documents that link each term at its first use: None (checked), or why not yet (an expected failure)."""
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def slug(heading: str) -> str:
    """The anchor python-markdown (and GitHub) gives a heading's text."""
    html = markdown.markdown(f"### {heading}", extensions=["toc"])
    return re.search(r'id="([^"]+)"', html).group(1)


def terms(glossary: str) -> dict[str, str]:
    """{term (its ``###`` heading, as written): the text below it, up to the next heading}."""
    parts = re.split(r"^(#{1,6}) (.+)$", glossary, flags=re.M)
    found = {}
    for level, heading, body in zip(parts[1::3], parts[2::3], parts[3::3]):
        if level == "###":
            assert heading not in found, f"{heading} is defined twice"
            found[heading] = body.strip()
    return found


def undefined(glossary: str) -> list[str]:
    """The terms of ``glossary`` without a definition of one or two sentences."""
    return [term for term, body in terms(glossary).items() if not 1 <= len(sentences(body)) <= 2]


def glossary_anchors(text: str, href: str) -> list[str]:
    """The anchors of every link of ``text`` into the glossary (``href``: its path as the text's document links it)."""
    return re.findall(r"\]\(" + re.escape(href) + r"#([^)\s]+)\)", text)


def prose_only(text: str) -> str:
    """``text`` with what is not its own running prose blanked to spaces, so that a position in it is a position in
    ``text``: code blocks, HTML comments, headings, images, quotations (a title), the text of a link to another
    document (its name) and every link's URL."""

    def blank(match: re.Match) -> str:
        return re.sub(r"\S", " ", match.group(0))

    text = re.sub(r"```.*?```", blank, text, flags=re.S)
    text = re.sub(r"<!--.*?-->", blank, text, flags=re.S)
    text = re.sub(r"^#{1,6} .*$", blank, text, flags=re.M)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", blank, text)
    text = re.sub(r'"[^"\n]*(?:\n[^"\n]*)?"', blank, text)

    def link(match: re.Match) -> str:  # a link into the glossary keeps its text; any other is a name
        if "glossary.md" in match.group(2):
            return match.group(1) + re.sub(r"\S", " ", match.group(2))
        return blank(match)

    return re.sub(r"(\[[^\]]*\])(\([^)\s]*\))", link, text)


def first_use(text: str, term: str) -> int | None:
    """Where ``term`` is first used in the prose of ``text`` (a plural counts; a term written as code is sought in code
    spans, any other outside them), or None."""
    prose = prose_only(text)
    if term.startswith("`"):
        found = prose.find(term)
        return None if found < 0 else found
    outside = re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), prose)
    found = re.search(r"(?<![\w-])" + re.escape(term) + r"(?:s|es)?(?![\w-])", outside, flags=re.I)
    return found.start() if found else None


def unlinked_first_uses(text: str, glossary: str, href: str) -> list[str]:
    """The terms of ``glossary`` that ``text`` uses whose first use is not inside a link to the glossary's entry of
    that term, or of a longer term that holds it (``[offline suite](…#offline-suite)`` is a first use of *suite*)."""
    links = [
        (m.start(), m.end(), m.group(1)) for m in re.finditer(r"\[[^\]]*\]\(" + re.escape(href) + r"#([^)]+)\)", text)
    ]
    defined = terms(glossary)
    holders = {
        term: {slug(t) for t in defined if re.search(r"(?<![\w-])" + re.escape(term) + r"(?![\w-])", t, flags=re.I)}
        for term in defined
    }
    out = []
    for term in defined:
        at = first_use(text, term)
        if at is not None and not any(start <= at < end and anchor in holders[term] for start, end, anchor in links):
            out.append(term)
    return out


def test_every_term_is_defined_in_one_or_two_sentences():
    text = GLOSSARY.read_text()
    assert len(terms(text)) >= 40
    assert undefined(text) == []


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_a_document_points_only_at_terms_the_glossary_defines(doc):
    """A link into the glossary names a term it defines: a term taken out of the glossary, or left without its
    definition, fails every document that uses it."""
    href = "docs/glossary.md" if doc.parent == REPO else "glossary.md"
    text = GLOSSARY.read_text()
    defined = {slug(term) for term in terms(text)} - {slug(term) for term in undefined(text)}
    assert sorted(set(glossary_anchors(doc.read_text(), href)) - defined) == []


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(d, marks=pytest.mark.xfail(reason=why, strict=False)) if why else d
        for d, why in FIRST_USE_LINKED.items()
    ],
)
def test_each_term_is_linked_at_its_first_use(doc):
    href = "docs/glossary.md" if "/" not in doc else "glossary.md"
    assert unlinked_first_uses((REPO / doc).read_text(), GLOSSARY.read_text(), href) == []


def test_the_checks_find_an_undefined_term_a_dangling_link_and_an_unlinked_first_use():
    glossary = (
        "# Glossary\n\nIntroduction, not a term.\n\n## A group\n\n### kept run\n\nThe kept run is one run. Its outputs"
        " are kept.\n\n### suite\n\n### offline suite\n\nThe offline suite needs no network.\n\n### `dist:DIST:FILE`\n\n"
        "A file of an installed distribution, named by it.\n"
    )
    assert list(terms(glossary)) == ["kept run", "suite", "offline suite", "`dist:DIST:FILE`"]
    assert undefined(glossary) == ["suite"]  # a heading with no definition
    readme = (
        "# Title with a kept run\n\nThe [offline suite](docs/glossary.md#offline-suite) and its suites; the kept runs"
        " ([kept run](docs/glossary.md#kept-run)); `dist:DIST:FILE` and [x](docs/glossary.md#missing).\n\n"
        "```bash\nkept run\n```\n"
    )
    assert glossary_anchors(readme, "docs/glossary.md") == ["offline-suite", "kept-run", "missing"]
    # the kept run is used before its link, the file form is never linked; suite's first use is inside the link of
    # offline suite, which holds it; the heading and the code block do not count
    assert unlinked_first_uses(readme, glossary, "docs/glossary.md") == ["kept run", "`dist:DIST:FILE`"]
    linked = readme.replace("the kept runs (", "the (").replace(
        "`dist:DIST:FILE`", "[`dist:DIST:FILE`](docs/glossary.md#distdistfile)"
    )
    assert unlinked_first_uses(linked, glossary, "docs/glossary.md") == []
