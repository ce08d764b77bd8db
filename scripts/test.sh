#!/usr/bin/env bash
# Set up if needed, lint, then run the tests.
#
#   bash scripts/test.sh            the full tier (CI): every test, unit (no JVM) and integration (real Spark
#                                   and Airflow), with the 15 slowest listed at the end
#   bash scripts/test.sh --quick    the quick tier: every unit test and one real-Spark smoke test (-m quick)
#
# Further arguments go to pytest, e.g. `bash scripts/test.sh tests/integration/test_soak.py`.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=(--durations=15)
if [ "${1:-}" = "--quick" ]; then
  shift
  tier=(-m quick --durations=5)
fi
bash scripts/setup.sh
bash scripts/browser.sh
bash scripts/services.sh
.venv/bin/ruff check airflow_async_stream dags tests
exec .venv/bin/pytest "${tier[@]}" "$@"
