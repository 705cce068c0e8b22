#!/usr/bin/env bash
# Compile llama.cpp's own server (llama-server), which runs the embedded model in a process of its own, into
# "$VENV/bin/llama-server". The source is llama.cpp as vendored in the llama-cpp-python source release on PyPI
# (pinned by version and sha256 below). Only llama-server's own targets are built, at full optimisation only where
# the model's arithmetic runs (scripts/llama_server_build.cmake); docs/models.md has the times.
#
#   bash scripts/build_model_server.sh             build, or take the build cache's copy, showing progress
#   bash scripts/build_model_server.sh --start     start the build in the background and return (scripts/setup.sh)
#   bash scripts/build_model_server.sh --progress  one line: how far the background build is
#   bash scripts/build_model_server.sh --wait      wait for the background build (starting it if needed)
#
# Nothing is built again while the binary, the pin and the flavour are unchanged. A finished build is kept in
# PAGEGRAPH_BUILD_CACHE (default ~/.cache/pagegraph/llama-server), keyed by the pin, the flavour, the build options,
# the compiler and (native) the CPU, so CI and a second checkout on the same machine copy it instead of compiling.
#
# PAGEGRAPH_LLAMA_BUILD picks the flavour (docs/models.md has the speed of each):
#   native    (default) every instruction set of the CPU it is built on, except AMX: llama.cpp's AMX kernels crash
#             on the K-quant weights the embedded models use (Q4_K, Q6_K)
#   portable  x86-64 with AVX2 (Haswell and later) or any aarch64: a binary other machines of a fleet can run
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/status_line.sh
VENV="${PAGEGRAPH_VENV:-.venv}"
FLAVOUR="${PAGEGRAPH_LLAMA_BUILD:-native}"
SOURCE_PACKAGE="llama-cpp-python==0.3.36"
SOURCE_SHA256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
# CPU-seconds of this build on the machine docs/models.md names: the estimate before the build's own rate is known
COMPILE_CPU_S=360
mode="${1:-build}"
binary="$VENV/bin/llama-server"
state="$VENV/share/pagegraph"
stamp="$VENV/.llama-server-build"
running="$state/llama-server.building" # "PID LOG STARTED" while a background build runs
want="$SOURCE_PACKAGE $SOURCE_SHA256 $FLAVOUR"

case "$FLAVOUR" in
    native)
        flags=(-DGGML_NATIVE=ON)
        if [ "$(uname -m)" = x86_64 ]; then
            # -march=native turns AMX on where the CPU has it; these keep every other instruction set
            flags+=("-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
                "-DCMAKE_CXX_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16")
        fi
        cpu="$(grep -m1 -E '^(flags|Features)' /proc/cpuinfo 2>/dev/null || uname -m)"
        ;;
    portable)
        flags=(-DGGML_NATIVE=OFF)
        if [ "$(uname -m)" = x86_64 ]; then
            flags+=(-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
        fi
        cpu="$(uname -m)"
        ;;
    *)
        echo "PAGEGRAPH_LLAMA_BUILD=$FLAVOUR: use native or portable" >&2
        exit 2
        ;;
esac
# another model server named (PAGEGRAPH_MODEL=openai:NAME, ollama:NAME, ...) or a binary given: nothing to build
case "${PAGEGRAPH_MODEL:-local}" in
    gguf:*) external="" ;;
    *:*) external="PAGEGRAPH_MODEL=$PAGEGRAPH_MODEL" ;;
    *) external="" ;;
esac
[ -n "${PAGEGRAPH_LLAMA_SERVER:-}" ] && external="PAGEGRAPH_LLAMA_SERVER=$PAGEGRAPH_LLAMA_SERVER"
if [ -n "$external" ]; then
    [ "$mode" = --start ] && echo "==> $external: llama-server is not built (unset it to build the embedded model's)"
    exit 0
fi
# No web UI (it would be fetched from a hub), no TLS, no curl: the server listens on loopback for pagegraph only.
options=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON
    -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF
    "${flags[@]}")

# The build cache's folder for this build, made from the pin, the flavour, the CPU, the compiler and the options (not
# at the top: `--progress`, which the set-up runs every 2 s, needs none of it).
cache_folder() {
    local compiler key
    compiler="$( (c++ --version 2>/dev/null || echo none) | head -1)"
    key="$(printf '%s\n' "$want" "$cpu" "$compiler" "${options[*]}" "$(sha256sum scripts/llama_server_build.cmake)" \
        | sha256sum | cut -c1-16)"
    echo "${PAGEGRAPH_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pagegraph/llama-server}/$key"
}

installed() { [ -x "$binary" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; }

from_cache() {
    local cached
    cached="$(cache_folder)"
    [ -x "$cached/llama-server" ] || return 1
    mkdir -p "$state" "$(dirname "$binary")"
    install -m 755 "$cached/llama-server" "$binary"
    cp "$cached/llama-server.json" "$state/llama-server.json"
    echo "$want" > "$stamp"
    echo "==> llama-server taken from the build cache ($cached)"
}

# the background build's pid while it runs
running_pid() {
    local pid
    pid="$(cut -d' ' -f1 "$running" 2>/dev/null)" || return 1
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

minutes() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }

progress() {
    local pid log started step done total elapsed
    read -r pid log started < "$running" || return 0
    elapsed=$(($(date +%s) - started))
    step="$(grep -o '^\[[0-9]*/[0-9]*\]' "$log" 2>/dev/null | tail -1 | tr -d '[]' || true)"
    if [ -z "$step" ]; then
        echo "llama-server: fetching and configuring its source ($(minutes "$elapsed"))"
        return 0
    fi
    done="${step%/*}" total="${step#*/}"
    if [ "$done" -lt $((total / 20 + 1)) ]; then
        echo "llama-server: compiling, $((100 * done / total)) % ($(minutes "$elapsed") so far)"
    else
        # from the rate so far; the last steps (linking) are quick, so this errs long
        echo "llama-server: compiling, $((100 * done / total)) %, about $(minutes $((elapsed * (total - done) / done))) left"
    fi
}

start() {
    installed && return 0
    from_cache && return 0
    running_pid > /dev/null && return 0
    if ! command -v c++ > /dev/null; then
        echo "no C++ compiler to build llama-server: install one (Debian: apt-get install g++), or use a model server" \
            "that is already running: PAGEGRAPH_MODEL=openai:NAME PAGEGRAPH_OPENAI_BASE_URL=http://HOST:PORT/v1" >&2
        exit 1
    fi
    mkdir -p "$state"
    local log="$state/llama-server-build.log"
    local jobs
    jobs="$(nproc)"
    echo "==> compiling llama.cpp's server ($FLAVOUR) from $SOURCE_PACKAGE's source, in the background: about" \
        "$(minutes $((COMPILE_CPU_S / jobs)))–$(minutes $((2 * COMPILE_CPU_S / jobs))) on $jobs cores, the longer while" \
        "the rest of the set-up shares them (log: $log)"
    setsid nohup bash "$0" --compile > "$log" 2>&1 < /dev/null &
    echo "$! $log $(date +%s)" > "$running"
}

wait_for_build() {
    local pid shown=0
    start
    if pid="$(running_pid)"; then
        while kill -0 "$pid" 2>/dev/null; do
            status_line "$(progress)" "$shown"
            shown=$((shown + 1))
            sleep 2
        done
        status_done
    fi
    if ! installed; then
        echo "llama-server's build failed; the end of its log:" >&2
        tail -30 "$(cut -d' ' -f2 "$running")" >&2
        exit 1
    fi
    rm -f "$running"
}

compile() {
    local work source_dir cached
    cached="$(cache_folder)"
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    # build tools missing from the PATH go into a throw-away environment, not into $VENV (pip may be installing there)
    if ! command -v cmake > /dev/null || ! command -v ninja > /dev/null; then
        python3 -m venv "$work/tools"
        "$work/tools/bin/pip" install --quiet --disable-pip-version-check cmake ninja
        export PATH="$work/tools/bin:$PATH"
    fi
    echo "$SOURCE_PACKAGE --hash=sha256:$SOURCE_SHA256" > "$work/requirements.txt"
    # only this package from source: its build tools (scikit-build-core, ...) as wheels, or pip compiles them too
    "$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps --no-binary llama-cpp-python --require-hashes \
        -r "$work/requirements.txt" -d "$work" 2>&1 | grep -v "^WARNING: Location '.*' is ignored" || true
    tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
    source_dir="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
    cmake -S "$source_dir" -B "$work/build" "${options[@]}" \
        -DCMAKE_PROJECT_INCLUDE="$(pwd)/scripts/llama_server_build.cmake"
    NINJA_STATUS="[%f/%t] " cmake --build "$work/build" --target llama-server -j "$(nproc)"
    mkdir -p "$cached" "$state"
    install -m 755 "$work/build/bin/llama-server" "$cached/llama-server.part"
    printf '{"source": "%s", "flavour": "%s", "machine": "%s"}\n' "$SOURCE_PACKAGE" "$FLAVOUR" "$(uname -m)" \
        > "$cached/llama-server.json"
    mv "$cached/llama-server.part" "$cached/llama-server"
    from_cache
}

case "$mode" in
    build | --wait) wait_for_build ;;
    --start) start ;;
    --progress) if running_pid > /dev/null; then progress; fi ;;
    --compile) compile ;;
    *)
        echo "usage: bash scripts/build_model_server.sh [--start | --progress | --wait]" >&2
        exit 2
        ;;
esac
