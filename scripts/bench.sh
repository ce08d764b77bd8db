#!/usr/bin/env bash
# Set up if needed, then run the benchmarks (about 40 minutes with the defaults; README "Benchmarks"): results in bench/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -c "import matplotlib" 2>/dev/null || .venv/bin/python -m pip install --quiet -e ".[bench]"
exec .venv/bin/python -m bench.run "$@"
