#!/usr/bin/env bash
# Install the Spark lines the version tests run beside the venv's own: each pip's pyspark in its own folder,
# a whole Spark (bin/spark-submit, jars/) used as SPARK_HOME. Kept in the user's cache between runs on a machine
# (ASYNC_STREAM_SPARKS moves it); a no-op when they are there.
#
#   bash scripts/sparks.sh                 the lines the full tier tests: 3.5.9 and 4.3.0
#   bash scripts/sparks.sh 4.0.5 4.1.4     others, e.g. for bench/spark_matrix.py
set -euo pipefail
cd "$(dirname "$0")/.."
root=${ASYNC_STREAM_SPARKS:-${XDG_CACHE_HOME:-$HOME/.cache}/airflow-async-stream/sparks}
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.5.9 4.3.0)
mkdir -p "$root"
for version in "${versions[@]}"; do
  home="$root/$version/pyspark"
  [ -x "$home/bin/spark-submit" ] && [ -f "$root/$version/.complete" ] && continue
  echo "sparks: installing pyspark $version into $root/$version (a Spark for SPARK_HOME; once per machine)"
  rm -rf "$root/$version.partial"
  .venv/bin/python -m pip install --quiet --no-deps --target "$root/$version.partial" "pyspark==$version"
  rm -rf "$root/$version"
  mv "$root/$version.partial" "$root/$version"
  touch "$root/$version/.complete"
done
