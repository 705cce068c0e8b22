#!/usr/bin/env bash
# Set up, index the shipped sample documents (searchable at once: summaries are taken from their text) and show the
# index while llama-server compiles, check that the model answers on this CPU, then answer a question over them with
# citations. A second run re-uses everything and only asks again. With a model server already running, no compile:
# PAGEGRAPH_MODEL=openai:NAME PAGEGRAPH_OPENAI_BASE_URL=http://HOST:PORT/v1 bash scripts/quickstart.sh
# `pagegraph summarize` has the local model rewrite the summaries afterwards (minutes; not needed to ask).
set -euo pipefail
cd "$(dirname "$0")/.."
# the samples are indexed while llama-server still compiles; the model is needed only from `model check` on
bash scripts/setup.sh --no-wait
source scripts/env.sh
VENV="${PAGEGRAPH_VENV:-.venv}"
export PAGEGRAPH_INDEX="${PAGEGRAPH_INDEX:-$(pwd)/.pagegraph/demo-index}"
"$VENV/bin/pagegraph" ingest samples --project demo --confidentiality public
"$VENV/bin/pagegraph" inspect
bash scripts/build_model_server.sh --wait
# the model loads and writes one short reply on this CPU, or says why not and what to do
"$VENV/bin/pagegraph" model check
QUESTION="${1:-What does error code E04 mean, and what should the owner do about it?}"
echo
echo "? $QUESTION"
"$VENV/bin/pagegraph" ask "$QUESTION"
