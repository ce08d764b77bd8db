#!/usr/bin/env bash
# Set up if needed, then lint and run every test: unit (no JVM) and integration (real Spark and Airflow).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check airflow_async_stream dags tests
exec .venv/bin/pytest "$@"
