#!/usr/bin/env bash
# Create the virtual environment and install pagegraph with everything it needs, offline-ready.
# Idempotent: a second run only re-installs when pyproject.toml changed. PAGEGRAPH_VENV picks the folder.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${PAGEGRAPH_VENV:-.venv}"
PY="${PYTHON:-python3}"

# Some machines' pip configuration names package folders that do not exist; pip warns about each one.
quiet_pip() { grep -v "^WARNING: Location '.*' is ignored" || true; }

# OCR of scanned PDF pages (other languages: tesseract-ocr-LANG and PAGEGRAPH_OCR_LANGUAGES).
source scripts/apt.sh
apt_install "Tesseract OCR for scanned pages" tesseract tesseract-ocr tesseract-ocr-eng

if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating virtual environment in $VENV"
    "$PY" -m venv "$VENV"
fi
stamp="$VENV/.pagegraph-install"
want="$(sha256sum pyproject.toml | cut -c1-16) $(pwd)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    # CPU torch first: a torch requirement resolved later would pull a multi-GB CUDA build.
    if ! "$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__ != '2.13.0+cpu')" 2>/dev/null; then
        echo "==> installing CPU torch 2.13.0"
        "$VENV/bin/pip" install --quiet --disable-pip-version-check torch==2.13.0 2>&1 | quiet_pip
    fi
    echo "==> installing pagegraph and its dependencies"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -e ".[dev]" 2>&1 | quiet_pip
    echo "$want" > "$stamp"
fi
# the embedded model's own process: llama.cpp's server, compiled for this CPU (PAGEGRAPH_LLAMA_BUILD=portable for one
# binary that runs on any x86-64 with AVX2)
bash scripts/build_model_server.sh
