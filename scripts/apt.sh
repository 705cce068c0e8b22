# apt_install WHAT "COMMAND..." PACKAGE...: install Debian's PACKAGEs unless every COMMAND is already on the PATH.
# Only as root with apt-get; elsewhere (or when apt fails) it says what is missing and goes on.
apt_install() {
    local what="$1" commands="$2" missing=""
    shift 2
    for command in $commands; do
        command -v "$command" >/dev/null || missing=1
    done
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "==> installing $what (Debian: $*)"
        if { [ -n "${PAGEGRAPH_APT_UPDATED:-}" ] || apt-get update -qq; } >/dev/null 2>&1 \
            && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1; then
            export PAGEGRAPH_APT_UPDATED=1
            return 0
        fi
    fi
    echo "    $what is not installed (Debian: apt-get install $*); going on without it"
}
