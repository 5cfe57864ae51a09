"""The paper: what ``paper/main.tex`` reads, and its PDF for one suite.

``paper/main.tex`` inputs generated tables (``\\input{tables/\\suite/claims}``) and figures
(``\\includegraphics{figures/\\suite/depth}``); :func:`inputs` reads those lines, so that the rule
building the PDF depends on exactly the files the paper reads (as showyourwork does) and a
changed table rebuilds it. :func:`build_paper` compiles the paper for one suite with latexmk.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

# \input{...} and \includegraphics[...]{...} outside comments; \suite is the suite being built.
_READS = re.compile(r"\\(input|includegraphics)\s*(?:\[[^\]]*\])?\s*\{([^}]+)\}")


def inputs(main_tex: str | os.PathLike, suite: str) -> list[str]:
    """Every generated file ``main_tex`` reads for ``suite``, as paths beside it (tables ``.tex``,
    figures ``.pdf``, the PDF pdflatex picks for a figure named without extension), in order."""
    main_tex = Path(main_tex)
    found = []
    for line in main_tex.read_text(encoding="utf-8").splitlines():
        code = re.split(r"(?<!\\)%", line, maxsplit=1)[0]
        for command, name in _READS.findall(code):
            name = name.replace("\\suite", suite).strip()
            if name == "main":
                continue
            suffix = ".tex" if command == "input" else ".pdf"
            path = main_tex.parent / (name if Path(name).suffix else name + suffix)
            found.append(str(path))
    return list(dict.fromkeys(found))


def build_paper(main_tex: str | os.PathLike, pdf: str | os.PathLike, suite: str) -> Path:
    """Compile ``main_tex`` for ``suite`` with latexmk into ``pdf`` (beside it: latexmk names the PDF after its
    driver, ``pdf`` with the suffix .tex); return ``pdf``."""
    if shutil.which("latexmk") is None or shutil.which("pdflatex") is None:
        raise RuntimeError(
            "TeX is not installed, so the PDF cannot be built (the tables and figures are ready under paper/). "
            "Install TeX Live with latexmk, e.g. `apt-get install texlive-latex-base texlive-latex-recommended "
            "latexmk` on Debian/Ubuntu or MacTeX on macOS, then rerun the paper target."
        )
    main_tex, pdf = Path(main_tex), Path(pdf)
    if pdf.parent.resolve() != main_tex.parent.resolve():
        raise ValueError(f"{pdf} must be built beside {main_tex} (latexmk writes the PDF in the driver's folder)")
    paper_dir = main_tex.parent
    driver = pdf.with_suffix(".tex")
    driver.write_text(f"\\def\\suite{{{suite}}}\n\\input{{{main_tex.stem}}}\n")
    res = subprocess.run(
        ["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", driver.name],
        cwd=paper_dir,
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        raise RuntimeError(
            f"latexmk failed on {driver} (exit {res.returncode}):\n{res.stdout[-4000:]}{res.stderr[-2000:]}"
        )
    return pdf
