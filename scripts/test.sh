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
stores_pid=
if [ "${1:-}" != "--quick" ]; then  # Azurite from npm (about 18 s on a fresh clone) beside the venv's pip
  bash scripts/stores.sh &
  stores_pid=$!
fi
bash scripts/setup.sh
archive_pid=
if [ "${1:-}" != "--quick" ]; then  # the quick tier drives no browser and starts no Redis, PostgreSQL or Azurite
  # Spark's class-data archive (tests/spark_class_archive.py, about 35 s on a fresh clone) is written meanwhile:
  # the tests' first drivers would otherwise wait for it, one core idle.
  .venv/bin/python -m tests.spark_class_archive >/dev/null 2>&1 &
  archive_pid=$!
  bash scripts/browser.sh
  bash scripts/services.sh
  wait "$stores_pid"  # its failure is the tier's
fi
.venv/bin/ruff check airflow_async_stream dags tests bench scripts
.venv/bin/ruff format --check --quiet airflow_async_stream dags tests bench scripts
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
# The full tier: one pytest on both cores (pytest-xdist, each file to one worker, in the order collected). The
# integration files come first (tests/integration sorts before tests/unit) and the unit files, small and many,
# fill the end; `--no-loadscope-reorder` keeps that order (xdist would otherwise start with the files that
# hold the most tests, the unit ones, and leave the long integration files for last). One integration test
# alone leaves most of the second core idle while it waits for batches, schedulers and browsers. The type check
# (36 s on a fresh clone) runs beside them; its report follows.
# The other Spark lines the version tests run install meanwhile (a few minutes on a new machine, a no-op after):
# those tests come late and wait for it (tests/integration/sparks.py).
sparks_log=$(mktemp)
bash scripts/sparks.sh >"$sparks_log" 2>&1 &
export ASYNC_STREAM_SPARKS_PID=$! ASYNC_STREAM_SPARKS_LOG=$sparks_log
types_log=$(mktemp)
"${types[@]}" >"$types_log" 2>&1 &
types_pid=$!
trap 'kill "$types_pid" "$ASYNC_STREAM_SPARKS_PID" $archive_pid 2>/dev/null || true; rm -f "$types_log" "$sparks_log"' EXIT  # never left running
wait "$archive_pid" || true  # the tests write it themselves when this could not (their warning says why)
tests_rc=0
.venv/bin/pytest -n 2 --dist loadfile --no-loadscope-reorder tests --durations=15 || tests_rc=$?
types_rc=0
wait "$types_pid" || types_rc=$?
wait "$ASYNC_STREAM_SPARKS_PID" || echo "sparks.sh failed: $(tail -n 5 "$sparks_log")" >&2  # the tests said so too
echo
echo "---- ${types[*]} (exit $types_rc) ----"
cat "$types_log"
if [ "$tests_rc" -ne 0 ] || [ "$types_rc" -ne 0 ]; then
  echo "FAILED: the tests exit $tests_rc; ${types[*]} exit $types_rc" >&2
  exit 1
fi
