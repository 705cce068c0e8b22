#!/usr/bin/env bash
# Set up if needed, then run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The web page's browser test drives Debian's Chromium (Playwright's and Selenium's own browser downloads do not work
# offline); without it that test is skipped, saying why.
source scripts/apt.sh
apt_install "Chromium for the web page's browser test" "chromium chromedriver" chromium chromium-driver
# The team server's test runs two replicas on one PostgreSQL (pgserver, a dev dependency) and Debian's Redis.
apt_install "Redis for the team server's test" "redis-server redis-cli" redis-server
source scripts/env.sh
VENV="${PAGEGRAPH_VENV:-.venv}"
exec "$VENV/bin/python" -m pytest "$@"
