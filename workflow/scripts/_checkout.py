"""Put this checkout's src/ first on sys.path.

Workflow scripts then run the library of the checkout they belong to, also in
the conda environments of envs/, which install the dependencies but not the
package. Snakemake puts this folder on the path of every script it runs.
"""

import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)
