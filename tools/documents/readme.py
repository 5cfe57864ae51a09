"""The values of README.in.md: the kept runs' times and machine (:func:`tools.documents.results.readme_values`), the
prepared environment's size (:mod:`.targets`) and the BibTeX of :mod:`.citation`."""

from __future__ import annotations

from tools.documents.citation import citation_values
from tools.documents.targets import environment_total


def readme_values() -> dict[str, str]:
    from tools.documents.results import readme_values as kept_values

    return kept_values() | citation_values() | {"environment_total": environment_total()}
