# Sourced by the set-up scripts. status_line TEXT N: the N-th report of something slow (one every 2 s): on a terminal
# TEXT replaces the line before it; elsewhere (a log, CI) every 15th is written as a line of its own.
status_line() {
    if [ -t 1 ]; then
        printf '\r\033[K    %s' "$1"
    elif [ $(($2 % 15)) = 0 ]; then
        echo "    $1"
    fi
}

# the terminal's status line cleared once the slow thing is done
status_done() {
    if [ -t 1 ]; then printf '\r\033[K'; fi
}
