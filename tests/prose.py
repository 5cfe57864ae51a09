"""Sentence lengths of Markdown prose, as a reader meets them: the measure of the documents' sentence test
(tests/repository/test_prose.py).

Code blocks, tables, HTML comments and headings are left out; paragraphs and list items are split apart first; a link
reads as its text. A sentence ends at ``.``, ``!``, ``?``, ``:`` or ``;`` before a capital letter, a code span, an
emphasis, a parenthesis or a link. A piece of fewer than three words (a label, a lone code span) is no sentence.
A generated document is measured as generated: its generated sentences count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIN_WORDS = 3
"""Fewer words than this make no sentence (a caption's label, a lone identifier)."""


def sentences(text: str) -> list[str]:
    """The sentences of the Markdown ``text``, in order."""
    text = re.sub(r"```.*?```", "\n\n", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    blocks: list[str] = []
    current: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("|") or stripped.startswith("#"):
            if current:
                blocks.append(" ".join(current))
                current = []
            continue
        if re.match(r"^([-*+]|\d+\.)\s", stripped):
            if current:
                blocks.append(" ".join(current))
                current = []
            stripped = re.sub(r"^([-*+]|\d+\.)\s+", "", stripped)
        current.append(stripped)
    if current:
        blocks.append(" ".join(current))
    out = []
    for block in blocks:
        block = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", block)  # a link reads as its text
        out += [s for s in re.split(r"(?<=[.!?:;])\s+(?=[A-Z`*(\[])", block) if len(s.split()) >= MIN_WORDS]
    return out


@dataclass(frozen=True)
class Measure:
    sentences: int
    mean: float
    longest: int
    over: list[str]  # the sentences longer than the limit, longest first

    def line(self, limit: int) -> str:
        return (
            f"{self.sentences} sentences, mean {self.mean:.1f} words, longest {self.longest}, "
            f"over {limit}: {len(self.over)}"
        )


def measure(text: str, limit: int) -> Measure:
    """The sentence count, the mean and the longest length in words, and the sentences over ``limit`` words."""
    found = sentences(text)
    lengths = [len(s.split()) for s in found]
    over = sorted((s for s in found if len(s.split()) > limit), key=lambda s: -len(s.split()))
    return Measure(len(found), sum(lengths) / max(len(lengths), 1), max(lengths, default=0), over)
