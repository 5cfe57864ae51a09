"""Short sentences: the documents a reader meets first keep to MEAN_WORDS words a sentence on average and none over
LONGEST_WORDS, measured as tests/prose.py measures (code blocks, tables, comments and headings left out; list items
split; links read as their text; generated sentences count)."""

import pytest
from conftest import REPO
from prose import measure, sentences

MEAN_WORDS = 22
LONGEST_WORDS = 45

DOCUMENTS: dict[str, str | None] = {
    # document -> None (checked), or why it is not checked yet (reported as an expected failure, never skipped)
    "README.md": None,
    "docs/reproducing-the-paper.md": None,
    "docs/your-model.md": None,
    "docs/cluster.md": None,
    "docs/configuration.md": None,
    "docs/targets.md": None,
    "docs/gpu.md": None,
    "docs/costs.md": None,
    "docs/glossary.md": None,
    "docs/library.md": None,
    "docs/results.md": None,
    "docs/outputs.md": None,
}
"""Every document the sentence test reads: the checked ones, and those pending with the reason."""


def problems(text: str) -> list[str]:
    """Why ``text`` fails the sentence test (empty: it passes)."""
    found = measure(text, LONGEST_WORDS)
    out = [f"mean {found.mean:.1f} words a sentence (at most {MEAN_WORDS})"] if found.mean > MEAN_WORDS else []
    return out + [f"{len(s.split())} words: {s}" for s in found.over]


@pytest.mark.parametrize(
    "doc",
    [pytest.param(d, marks=pytest.mark.xfail(reason=why, strict=False)) if why else d for d, why in DOCUMENTS.items()],
)
def test_sentences_are_short(doc):
    text = (REPO / doc).read_text()
    assert sentences(text), f"{doc}: no sentence found"
    assert problems(text) == [], f"{doc}: {measure(text, LONGEST_WORDS).line(LONGEST_WORDS)}"


def test_every_document_of_the_list_exists_and_the_pending_ones_say_why():
    assert [d for d in DOCUMENTS if not (REPO / d).is_file()] == []
    assert all(why is None or why.strip() for why in DOCUMENTS.values())


def test_the_measure_reads_prose_as_a_reader_meets_it():
    text = (
        "# A heading of many words that is not a sentence at all\n\n"
        "<!-- A comment of many words that is not read either. -->\n"
        "The first sentence has six words. The [second one](x.md#y) reads its link as text: "
        "`code` starts the third one; and this goes on.\n\n"
        "| a table | of many words that is left out |\n| --- | --- |\n\n"
        "```bash\necho a code block of many words that is left out\n```\n\n"
        "- A list item is a sentence.\n- Another item, split from the first\n  and continued here.\n"
        "- Two words.\n"
    )
    assert sentences(text) == [
        "The first sentence has six words.",
        "The second one reads its link as text:",
        "`code` starts the third one; and this goes on.",
        "A list item is a sentence.",
        "Another item, split from the first and continued here.",
    ]
    found = measure(text, 8)
    assert (found.sentences, found.longest) == (5, 9)
    assert found.over == [
        "`code` starts the third one; and this goes on.",
        "Another item, split from the first and continued here.",
    ]


def test_the_test_fails_on_a_long_sentence_and_a_long_average():
    long = "This sentence " + "goes on and on " * 12 + "until it stops."
    assert problems(long)[0].startswith("mean 53.0 words") and problems(long)[1].startswith("53 words: ")
    assert problems("Short and plain. " * 3) == []
    wordy = ("A sentence of exactly thirty words, all " + "and more " * 11 + "now. ") * 2
    assert problems(wordy) == ["mean 30.0 words a sentence (at most 22)"]
