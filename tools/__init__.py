"""Tools of the repository, not of the library (no wheel ships them): :mod:`tools.documents` writes the generated
documents, :mod:`tools.lock` regenerates requirements/lock.txt, and ``tools/build_cpython.sh`` builds a second CPython
from Debian's source package. Run from the repository's root: ``python -m tools.documents``."""
