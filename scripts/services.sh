#!/usr/bin/env bash
# Install Debian's Redis and PostgreSQL for the multi-host test (tests/integration/test_multi_host.py: a Celery
# broker and Airflow's metadata database; the test starts its own servers on free ports, as user postgres).
# A no-op when they are there; without root, says the command and leaves the test to fail naming it.
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
[ ${#missing[@]} -eq 0 ] && exit 0
install="apt-get install -y ${missing[*]}"
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "services: installing Debian's ${missing[*]} for the multi-host test ($install)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || {
    apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
  }
else
  echo "services: the multi-host test needs Debian's ${missing[*]}; run \`sudo $install\`" >&2
fi
