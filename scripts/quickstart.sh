#!/usr/bin/env bash
# Set up, then index the shipped sample documents and show what the index holds.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
VENV="${PAGEGRAPH_VENV:-.venv}"
export PAGEGRAPH_INDEX="${PAGEGRAPH_INDEX:-$(pwd)/.pagegraph/demo-index}"
"$VENV/bin/pagegraph" ingest samples --project demo --confidentiality public
"$VENV/bin/pagegraph" inspect
"$VENV/bin/pagegraph" inspect --document sb40-user-manual.pdf --tree
