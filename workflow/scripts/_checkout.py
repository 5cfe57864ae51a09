"""Put this checkout's src/ first on sys.path, and exit without the collector's last sweep.

Workflow scripts then run the library of the checkout they belong to, also in
the conda environments of envs/, which install the dependencies but not the
package. Snakemake puts this folder on the path of every script it runs.
Every script imports this module first, so each job's process also ends without sweeping
the libraries' objects (rollout_equality.runtime.prelude.exit_without_final_sweep says why).
"""

import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)

from rollout_equality.runtime.prelude import exit_without_final_sweep  # noqa: E402  (from the path set above)

exit_without_final_sweep()
