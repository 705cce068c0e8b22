#!/usr/bin/env bash
# Compile llama.cpp's own server (llama-server), which runs the embedded model in a process of its own, into
# "$VENV/bin/llama-server". The source is llama.cpp as vendored in the llama-cpp-python source release on PyPI
# (pinned by version and sha256 below). Idempotent: nothing is built again while the binary, the pin and the flavour
# are unchanged. ~10-20 min on 2 cores the first time.
#
# PAGEGRAPH_LLAMA_BUILD picks the flavour (docs/models.md has the speed of each):
#   native    (default) every instruction set of the CPU it is built on, except AMX: llama.cpp's AMX kernels crash
#             on the K-quant weights the embedded models use (Q4_K, Q6_K)
#   portable  x86-64 with AVX2 (Haswell and later) or any aarch64: a binary other machines of a fleet can run
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${PAGEGRAPH_VENV:-.venv}"
FLAVOUR="${PAGEGRAPH_LLAMA_BUILD:-native}"
SOURCE_PACKAGE="llama-cpp-python==0.3.36"
SOURCE_SHA256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
binary="$VENV/bin/llama-server"
stamp="$VENV/.llama-server-build"
want="$SOURCE_PACKAGE $SOURCE_SHA256 $FLAVOUR"

case "$FLAVOUR" in
    native)
        flags=(-DGGML_NATIVE=ON)
        if [ "$(uname -m)" = x86_64 ]; then
            # -march=native turns AMX on where the CPU has it; these keep every other instruction set
            flags+=("-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
                "-DCMAKE_CXX_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16")
        fi
        ;;
    portable)
        flags=(-DGGML_NATIVE=OFF)
        if [ "$(uname -m)" = x86_64 ]; then
            flags+=(-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
        fi
        ;;
    *)
        echo "PAGEGRAPH_LLAMA_BUILD=$FLAVOUR: use native or portable" >&2
        exit 2
        ;;
esac

if [ -x "$binary" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    exit 0
fi

if ! command -v cmake >/dev/null; then
    echo "==> installing cmake into $VENV (not on the PATH)"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check cmake
    export PATH="$(cd "$VENV/bin" && pwd):$PATH"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "==> building llama.cpp's server ($FLAVOUR) from $SOURCE_PACKAGE's source (~10-20 min on 2 cores)"
echo "$SOURCE_PACKAGE --hash=sha256:$SOURCE_SHA256" > "$work/requirements.txt"
"$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps --no-binary :all: --require-hashes \
    -r "$work/requirements.txt" -d "$work" 2>&1 | grep -v "^WARNING: Location '.*' is ignored" || true
tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
source_dir="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
# No web UI (it would be fetched from a hub), no TLS, no curl: the server listens on loopback for pagegraph only.
cmake -S "$source_dir" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
    "${flags[@]}" > "$work/configure.log" 2>&1 || { tail -30 "$work/configure.log" >&2; exit 1; }
cmake --build "$work/build" --target llama-server -j "$(nproc)" > "$work/build.log" 2>&1 \
    || { tail -30 "$work/build.log" >&2; exit 1; }
install -m 755 "$work/build/bin/llama-server" "$binary"
mkdir -p "$VENV/share/pagegraph"
printf '{"source": "%s", "flavour": "%s", "machine": "%s"}\n' "$SOURCE_PACKAGE" "$FLAVOUR" "$(uname -m)" \
    > "$VENV/share/pagegraph/llama-server.json"
echo "$want" > "$stamp"
