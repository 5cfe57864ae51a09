"""Filling a template: every ``{name}`` of a Markdown template replaced by its value (as paper/main.tex reads
macros.tex), a literal brace doubled (``{{pdf,png}}``)."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping

COMMAND = "python -m tools.documents"
"""The command that writes every generated document (and names itself in each)."""
NAME = re.compile(r"[a-z][a-z0-9_]*")
"""What a template's ``{name}`` may be: lower case, digits and underscores."""


def names(text: str, template: str = "the template") -> list[str]:
    """The ``{name}``s of ``text`` in order (repeats kept); a field that is not a plain name (``{x.y}``,
    ``{x:>3}``, ``{x!r}``, ``{}``) or an unpaired brace raises ValueError naming ``template``."""
    found = []
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as error:
        raise ValueError(f"{template}: {error} (a literal brace is written twice: {{{{ or }}}})") from None
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        if not NAME.fullmatch(field) or spec or conversion:
            whole = field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise ValueError(f"{template}: {{{whole}}} is not a {{name}} (lower case, digits, underscores)")
        found.append(field)
    return found


def fill(text: str, values: Mapping[str, str], template: str = "the template") -> str:
    """``text`` with every ``{name}`` replaced by ``values[name]``. A name without a value raises ValueError that
    names ``template`` and every such name (values that no name asks for are left unused)."""
    missing = sorted(set(names(text, template)) - set(values))
    if missing:
        raise ValueError(f"{template}: no value for {', '.join(f'{{{m}}}' for m in missing)}")
    return "".join(
        literal + ("" if field is None else str(values[field]))
        for literal, field, _, _ in string.Formatter().parse(text)
    )
