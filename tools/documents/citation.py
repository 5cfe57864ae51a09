"""BibTeX for the paper and for this software, written from CITATION.cff (the one statement of both).

README.md shows :func:`bibtex` in its last lines; CITATION.cff carries the same entries as a comment
(:func:`cff_comment`, which tests/repository/test_repository.py holds to it).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from tools.documents.kept import REPO

CITATION = REPO / "CITATION.cff"
CHANGELOG = REPO / "CHANGELOG.md"
COMMENT_START = "# BibTeX, as README.md shows it (`python -m tools.documents` writes it from the fields below):"


def _authors(authors: list[dict[str, Any]]) -> str:
    """BibTeX's author field: a person as ``family, given`` (as far as CITATION.cff names them), an entity braced."""
    names = []
    for author in authors:
        if "name" in author:  # an entity: braced, so that BibTeX does not split it into first and last names
            names.append("{" + author["name"] + "}")
        else:
            given = author.get("given-names")
            names.append(f"{author['family-names']}, {given}" if given else author["family-names"])
    return " and ".join(names)


def _entry(kind: str, key: str, fields: dict[str, Any]) -> str:
    lines = [f"@{kind}{{{key},"]
    lines += [f"  {name} = {{{value}}}," for name, value in fields.items() if value not in (None, "")]
    return "\n".join(lines) + "\n}"


def released() -> str:
    """The year of the software's state: that of the newest entry of CHANGELOG.md (``## YYYY-MM-DD``)."""
    found = re.search(r"^## (\d{4})-\d\d-\d\d", CHANGELOG.read_text(), flags=re.M)
    if found is None:
        raise ValueError(f"{CHANGELOG}: no dated entry (## YYYY-MM-DD) to date the software by")
    return found.group(1)


def bibtex(citation: dict[str, Any] | None = None) -> str:
    """The two BibTeX entries: the paper (CITATION.cff's preferred-citation), then this software (its top level)."""
    citation = yaml.safe_load(CITATION.read_text()) if citation is None else citation
    paper = citation["preferred-citation"]
    first = paper["authors"][0].get("family-names", paper["authors"][0].get("name", "")).lower()
    arxiv = re.search(r"arxiv\.(\d{4}\.\d{4,5})", paper["doi"], flags=re.I)
    paper_entry = _entry(
        "article",
        f"{first}{paper['year']}equality",
        {
            "author": _authors(paper["authors"]),
            "title": paper["title"],
            "journal": f"arXiv preprint arXiv:{arxiv.group(1)}" if arxiv else paper.get("journal"),
            "year": paper["year"],
            "doi": paper["doi"],
            "url": paper.get("url"),
        },
    )
    software_entry = _entry(
        "software",
        citation["title"].split(":")[0].replace("-", "_"),
        {
            "author": _authors(citation["authors"]),
            "title": citation["title"],
            "version": citation["version"],
            "year": released(),
            "license": citation["license"],
            "url": citation.get("repository-code") or citation.get("url"),
        },
    )
    return f"{paper_entry}\n\n{software_entry}"


def cff_comment(citation: dict[str, Any] | None = None) -> str:
    """The comment of CITATION.cff that holds :func:`bibtex`: its first line, then every BibTeX line behind ``# ``."""
    lines = [COMMENT_START] + [f"#   {line}" if line else "#" for line in bibtex(citation).splitlines()]
    return "\n".join(lines) + "\n"


def cff_text() -> str:
    """CITATION.cff with its BibTeX comment (:func:`cff_comment`) as the fields below it give it now: the comment
    stands after the file's opening comment, in place of the one there."""
    lines = CITATION.read_text().splitlines(keepends=True)
    head = []
    while lines and lines[0].startswith("#") and not lines[0].startswith(COMMENT_START):
        head.append(lines.pop(0))
    if lines and lines[0].startswith(COMMENT_START):
        while lines and lines[0].startswith("#"):
            lines.pop(0)
    body = "".join(lines)
    return "".join(head) + cff_comment(yaml.safe_load(body)) + body


def citation_values() -> dict[str, str]:
    """README's ``{bibtex}`` and the paper's arXiv link, ``{arxiv}``."""
    paper = yaml.safe_load(CITATION.read_text())["preferred-citation"]
    arxiv = re.search(r"arxiv\.(\d{4}\.\d{4,5})", paper["doi"], flags=re.I)
    return {"bibtex": bibtex(), "arxiv": f"[arXiv:{arxiv.group(1)}]({paper['url']})"}
