#!/usr/bin/env bash
# Set up, check that the embedded model answers on this CPU, index the shipped sample documents (searchable at once:
# summaries are taken from their text), show the index, then answer a question over them with citations. A second
# run re-uses everything and only asks again.
# `pagegraph summarize` has the local model rewrite the summaries afterwards (minutes; not needed to ask).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
VENV="${PAGEGRAPH_VENV:-.venv}"
export PAGEGRAPH_INDEX="${PAGEGRAPH_INDEX:-$(pwd)/.pagegraph/demo-index}"
# the embedded model loads and writes one short reply on this CPU, or says why not and what to do
"$VENV/bin/pagegraph" model check
"$VENV/bin/pagegraph" ingest samples --project demo --confidentiality public
"$VENV/bin/pagegraph" inspect
QUESTION="${1:-What does error code E04 mean, and what should the owner do about it?}"
echo
echo "? $QUESTION"
"$VENV/bin/pagegraph" ask "$QUESTION"
