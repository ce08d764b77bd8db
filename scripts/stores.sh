#!/usr/bin/env bash
# Install Azurite (npm's `azurite`) into .node/ for the object-store tests (tests/stores.py starts it on
# 127.0.0.1, beside moto's S3 server from the test extra). A no-op when it is there; without npm, says so and
# leaves those tests to fail naming the command.
set -euo pipefail
cd "$(dirname "$0")/.."
version=3.35.0
[ -x .node/node_modules/.bin/azurite-blob ] && grep -q "\"version\": \"$version\"" .node/node_modules/azurite/package.json && exit 0
if ! command -v npm >/dev/null 2>&1; then
  echo "stores: the object-store tests need Node.js and npm for Azurite; then run \`bash scripts/stores.sh\`" >&2
  exit 0
fi
echo "stores: installing Azurite $version into .node/ for the object-store tests"
npm install --silent --no-audit --no-fund --prefix .node "azurite@$version" >/dev/null
