#!/usr/bin/env bash
# Set up if needed, then run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The web page's browser test drives Debian's Chromium (Playwright's and Selenium's own browser downloads do not work
# offline); without it that test is skipped, saying why.
source scripts/apt.sh
apt_install "Chromium for the web page's browser test" "chromium chromedriver" chromium chromium-driver
source scripts/env.sh
VENV="${PAGEGRAPH_VENV:-.venv}"
exec "$VENV/bin/python" -m pytest "$@"
