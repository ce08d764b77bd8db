#!/usr/bin/env bash
# Install Debian's chromium for the pages' browser tests (headless; playwright's own browser downloads are not
# used). A no-op when it is there; without root, says the command and leaves the tests to fail naming it.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
install="apt-get install -y chromium"
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "browser: installing Debian's chromium for the browser tests ($install)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 || {
    apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
  }
else
  echo "browser: the browser tests need Debian's chromium; run \`sudo $install\`" >&2
fi
