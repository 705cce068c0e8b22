#!/usr/bin/env bash
# Set up if needed, then run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
VENV="${PAGEGRAPH_VENV:-.venv}"
exec "$VENV/bin/python" -m pytest "$@"
