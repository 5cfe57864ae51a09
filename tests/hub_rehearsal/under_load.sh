#!/usr/bin/env bash
# Run rehearsal tests under load: N times, each beside two CPU-bound processes, and count the verdicts.
#
#   bash tests/hub_rehearsal/under_load.sh [N] [pytest selection...]
#
# N defaults to 5; the selection defaults to the preflight's drifted-sources test (~30 s alone on 2 cores; olah,
# huggingface_hub and the check-sources subprocess then share the CPU with the two busy loops). Each run's
# pytest log goes to $LOAD_LOGS (default: a fresh temporary folder); the last line says how many passed. The
# exit status is 0 only when every run passed. Run from the repository root with the project's environment:
# PYTEST (default .venv/bin/pytest) names the pytest to use, PYTHONPATH is passed through.
set -u
runs=${1:-5}
shift || true
selection=("$@")
if [ ${#selection[@]} -eq 0 ]; then
    selection=(tests/workflow/test_rehearsal.py::test_check_sources_names_exactly_the_sources_that_drifted)
fi
pytest=${PYTEST:-.venv/bin/pytest}
logs=${LOAD_LOGS:-$(mktemp -d)}
mkdir -p "$logs"

hogs=()
stop_hogs() {
    for pid in "${hogs[@]}"; do kill "$pid" 2>/dev/null; done
    hogs=()
}
trap stop_hogs EXIT

passed=0
for i in $(seq 1 "$runs"); do
    for _ in 1 2; do
        python3 -c 'while True: pass' &
        hogs+=($!)
    done
    start=$(date +%s)
    if "$pytest" -q -p no:cacheprovider "${selection[@]}" >"$logs/run-$i.log" 2>&1; then
        verdict=passed
        passed=$((passed + 1))
    else
        verdict=FAILED
    fi
    stop_hogs
    echo "run $i of $runs: $verdict in $(($(date +%s) - start)) s under load ($(tail -n 1 "$logs/run-$i.log"))"
done
echo "$passed of $runs runs passed under load; logs in $logs"
[ "$passed" -eq "$runs" ]
