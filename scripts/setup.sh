#!/usr/bin/env bash
# Create the virtual environment and install pagegraph with everything it needs, offline-ready; llama.cpp's server
# (the embedded model's process) compiles in the background meanwhile. Idempotent: a second run only re-installs
# when pyproject.toml changed. PAGEGRAPH_VENV picks the folder.
#   bash scripts/setup.sh             returns once everything is installed and llama-server is built
#   bash scripts/setup.sh --no-wait   returns once the Python packages are in; the compile goes on
#                                     (`bash scripts/build_model_server.sh --wait` waits for it)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${PAGEGRAPH_VENV:-.venv}"
PY="${PYTHON:-python3}"

# OCR of scanned PDF pages (other languages: tesseract-ocr-LANG and PAGEGRAPH_OCR_LANGUAGES).
source scripts/apt.sh
source scripts/status_line.sh
apt_install "Tesseract OCR for scanned pages" tesseract tesseract-ocr tesseract-ocr-eng

if [ ! -x "$VENV/bin/python" ]; then
    echo "==> creating virtual environment in $VENV"
    "$PY" -m venv "$VENV"
fi
# the embedded model's own process: llama.cpp's server, compiled for this CPU (PAGEGRAPH_LLAMA_BUILD=portable for one
# binary that runs on any x86-64 with AVX2)
bash scripts/build_model_server.sh --start

# COMMAND... runs while one line says how long it has taken and how far llama-server's compile is
with_progress() {
    local what="$1" log started shown=0 line build
    shift
    log="$(mktemp)"
    started="$(date +%s)"
    "$@" > "$log" 2>&1 &
    local pid=$!
    # a background job of a script ignores Ctrl-C: stop it with the script (the compile goes on, for the next run)
    trap 'pkill -P "$pid" 2>/dev/null; kill "$pid" 2>/dev/null; exit 130' INT TERM
    while kill -0 "$pid" 2>/dev/null; do
        line="$what ($(($(date +%s) - started)) s)"
        build="$(bash scripts/build_model_server.sh --progress)"
        [ -n "$build" ] && line="$line · $build"
        status_line "$line" "$shown"
        shown=$((shown + 1))
        sleep 2
    done
    status_done
    trap - INT TERM
    if ! wait "$pid"; then
        # some machines' pip configuration names package folders that do not exist; pip warns about each one
        grep -v "^WARNING: Location '.*' is ignored" "$log" >&2 || true
        rm -f "$log"
        return 1
    fi
    rm -f "$log"
}

install_packages() {
    # CPU torch first: a torch requirement resolved later would pull a multi-GB CUDA build.
    if ! "$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__ != '2.13.0+cpu')" 2>/dev/null; then
        "$VENV/bin/pip" install --quiet --disable-pip-version-check torch==2.13.0
    fi
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -e ".[dev]"
}

stamp="$VENV/.pagegraph-install"
want="$(sha256sum pyproject.toml | cut -c1-16) $(pwd)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "==> installing pagegraph and its dependencies (CPU torch 2.13.0 first): about 4 min on a fresh machine"
    with_progress "installing Python packages" install_packages
    echo "$want" > "$stamp"
fi
if [ "${1:-}" != --no-wait ]; then
    bash scripts/build_model_server.sh --wait
fi
