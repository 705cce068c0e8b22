#!/usr/bin/env bash
# Set up if needed, then run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The web page's browser test drives Debian's Chromium (Playwright's and Selenium's own browser downloads do not work
# offline); it is skipped, saying why, where neither the browser nor root's apt is at hand.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "==> installing Debian's chromium and chromium-driver for the web page's browser test"
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; } >/dev/null \
            || echo "    (could not install them: the browser test will be skipped)"
    fi
fi
source scripts/env.sh
VENV="${PAGEGRAPH_VENV:-.venv}"
exec "$VENV/bin/python" -m pytest "$@"
