#!/usr/bin/env bash
# Set up if needed, then run the main job: the safe-disable migration through Airflow on the embedded local Spark.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python scripts/demo.py "$@"
