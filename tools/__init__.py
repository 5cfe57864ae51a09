"""Tools of the repository, not of the library (no wheel ships them): :mod:`tools.documents` writes the generated
documents. Run from the repository's root: ``python -m tools.documents``."""
