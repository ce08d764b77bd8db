#!/usr/bin/env bash
# Set up if needed, lint, then run the tests.
#
#   bash scripts/test.sh            the full tier (CI): every test, unit (no JVM) and integration (real Spark
#                                   and Airflow), with the slowest listed at the end
#   bash scripts/test.sh --quick    the quick tier: every unit test and one real-Spark smoke test (-m quick)
#
# Further arguments go to one pytest, e.g. `bash scripts/test.sh tests/integration/test_soak.py`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/browser.sh
bash scripts/services.sh
.venv/bin/ruff check airflow_async_stream dags tests bench
.venv/bin/ruff format --check --quiet airflow_async_stream dags tests bench
types=(.venv/bin/mypy)  # the package's types ([tool.mypy] in pyproject.toml)
if [ "${1:-}" = "--quick" ]; then
  shift
  "${types[@]}"
  exec .venv/bin/pytest -m quick --durations=5 "$@"
fi
if [ "$#" -gt 0 ]; then
  "${types[@]}"
  exec .venv/bin/pytest --durations=15 "$@"
fi
# The full tier in two lanes. The integration tests start one Spark job at a time and leave most of the
# second core idle (27 CPU-minutes in 32 minutes on two cores); the type check (36 s on a fresh clone), the unit
# tests (no JVM, about 3 minutes of one core) and the install guide's walk (a pip install into a fresh venv, 70
# of its 100 s) run beside them, and their report follows.
beside=(tests/unit tests/integration/test_install.py)
beside_log=$(mktemp)
{ "${types[@]}" && exec .venv/bin/pytest "${beside[@]}" --durations=5; } >"$beside_log" 2>&1 &  # exec: the pid is pytest's
beside_pid=$!
trap 'kill "$beside_pid" 2>/dev/null || true; rm -f "$beside_log"' EXIT  # never left running behind a stop
main=0
.venv/bin/pytest tests/integration --ignore=tests/integration/test_install.py --durations=15 || main=$?
other=0
wait "$beside_pid" || other=$?
echo
echo "---- run beside them: ${types[*]}, then ${beside[*]} (exit $other) ----"
cat "$beside_log"
if [ "$main" -ne 0 ] || [ "$other" -ne 0 ]; then
  echo "FAILED: the integration tests exit $main; ${types[*]} and ${beside[*]} exit $other" >&2
  exit 1
fi
