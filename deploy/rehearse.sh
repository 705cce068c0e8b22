#!/usr/bin/env bash
# deploy/compose.yaml's services run as processes on this machine, for where no container runtime is at hand: a
# pgvector PostgreSQL (pgserver), Redis, two replicas started together with the compose file's environment, and nginx
# with deploy/nginx.conf. Two lines of that file change: nginx listens on 127.0.0.1:8088, not port 80, and the replicas
# listen on REPLICA_PORT (2124; 2024 may be taken here). Docker's DNS (127.0.0.11) is stood in for by dnsmasq, which
# answers "pagegraph" with both replicas' addresses (127.0.0.2 and 127.0.0.3), as Docker's does for a scaled service.
# Then, through nginx: /ok, the web page, a Host that is not allowed, a question asked with the SDK and the embedded
# model; one replica killed; the same question again.
#
# Needs root (port 53 on 127.0.0.11), nginx and dnsmasq (Debian: apt-get install nginx-light dnsmasq-base), redis-server
# and the project's venv (bash scripts/setup.sh). Usage: sudo bash deploy/rehearse.sh [WORK_FOLDER]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
W=${1:-/tmp/pagegraph-rehearsal}
PY=$REPO/.venv/bin/python
PAGEGRAPH=$REPO/.venv/bin/pagegraph
REPLICA_PORT=2124
REDIS_PORT=6391
for tool in nginx dnsmasq redis-server; do
    command -v $tool > /dev/null || { echo "$tool is not installed" >&2; exit 1; }
done
if [ -e "$W" ] && [ ! -e "$W/.pagegraph-rehearsal" ]; then
    echo "$W exists and is not a rehearsal's folder: name another" >&2
    exit 1
fi
rm -rf "$W"
mkdir -p "$W"
touch "$W/.pagegraph-rehearsal"
# each process in a session of its own, whose id is kept in NAME.group: stopping the group stops what it started
start() {
    local name=$1
    shift
    setsid bash -c 'echo $$ > "$0"; exec "$@"' "$W/$name.group" "$@" > "$W/$name.log" 2>&1 &
    disown
}
stop() { kill "${2:--TERM}" -- -"$(cat "$W/$1.group")" 2> /dev/null || true; }
cleanup() {
    nginx -c "$W/nginx-main.conf" -s stop 2> /dev/null || true
    for group in "$W"/*.group; do stop "$(basename "$group" .group)"; done
    pkill -INT -f "postgres -D $W/pg" || true  # a fast shutdown: clients may still be connected
}
trap cleanup EXIT

URL=$($PY -c "
import pgserver
server = pgserver.get_server('$W/pg', cleanup_mode=None)
server.psql('CREATE DATABASE pagegraph;')
print('postgresql://postgres:@/pagegraph?host=$W/pg')")
start redis redis-server --bind 127.0.0.1 --port $REDIS_PORT --save "" --appendonly no --dir "$W"
printf '127.0.0.2 pagegraph\n127.0.0.3 pagegraph\n' > "$W/hosts"
start dns dnsmasq --no-daemon --listen-address=127.0.0.11 --bind-interfaces --port=53 --no-resolv --no-hosts \
    --addn-hosts="$W/hosts" --local=/pagegraph/

KEY=$($PAGEGRAPH users add ana --role editor --projects demo --file "$W/users.json" | tail -1)
# ingest from the host into the index the replicas serve, as docs/deployment.md shows
PAGEGRAPH_DATABASE_URL=$URL PAGEGRAPH_INGEST_SUMMARIES=extractive \
    $PAGEGRAPH ingest "$REPO/samples" --index "$W/host/team" --project demo > "$W/ingest.log" 2>&1
echo "ingested from the host: $(tail -1 "$W/ingest.log")"

for n in 2 3; do  # started together, as `docker compose up --scale pagegraph=2` starts them
    mkdir -p "$W/replica$n/srv/pagegraph"
    start replica$n env PAGEGRAPH_DATABASE_URL="$URL" PAGEGRAPH_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0 \
        PAGEGRAPH_AUTH_FILE="$W/users.json" PAGEGRAPH_ALLOWED_HOSTS=localhost \
        PAGEGRAPH_INDEX="$W/replica$n/srv/pagegraph/team" \
        $PAGEGRAPH serve --host 127.0.0.$n --port $REPLICA_PORT --config "$REPO/langgraph.json"
done
for n in 2 3; do  # the compose file's health check
    for second in $(seq 1 180); do
        if $PY -c "import urllib.request; urllib.request.urlopen('http://127.0.0.$n:$REPLICA_PORT/ok')" 2> /dev/null; then
            echo "replica 127.0.0.$n healthy after ~$second s"
            continue 2
        fi
        sleep 1
    done
    echo "replica 127.0.0.$n is not healthy:" >&2
    tail -20 "$W/replica$n.log" >&2
    exit 1
done

sed -e 's/listen 80;/listen 127.0.0.1:8088;/' -e "s/pagegraph:2024/pagegraph:$REPLICA_PORT/" \
    "$REPO/deploy/nginx.conf" > "$W/default.conf"
cat > "$W/nginx-main.conf" << CONF
pid $W/nginx.pid;
error_log $W/nginx-error.log;
events {}
http {
    log_format upstream '\$request \$status via \$upstream_addr';
    access_log $W/nginx-access.log upstream;
    client_body_temp_path $W/body;
    proxy_temp_path $W/proxy;
    include $W/default.conf;
}
CONF
nginx -c "$W/nginx-main.conf"
sleep 1
curl -s -o /dev/null -w "GET /ok through nginx: %{http_code}\n" http://localhost:8088/ok
curl -s -o /dev/null -w "GET / (the web page) through nginx: %{http_code}\n" http://localhost:8088/
curl -s -o /dev/null -w "a Host that is not allowed: %{http_code}\n" -H "Host: elsewhere.example" http://127.0.0.1:8088/ok

ask() {
    KEY=$KEY $PY - << 'ASK'
import asyncio, os, time
from langgraph_sdk import get_client

async def main() -> None:
    client = get_client(url="http://localhost:8088", api_key=os.environ["KEY"])
    thread = (await client.threads.create())["thread_id"]
    began = time.monotonic()
    question = {"question": "What torque do the terminal screws take?", "documents": ["commissioning-guide.md"]}
    events = [part async for part in client.runs.stream(thread, "rag", input=question, stream_mode="values")]
    state = (await client.threads.get_state(thread))["values"]
    assert state["answer"] and state["citations"], state
    print(f"answered through nginx in {time.monotonic() - began:.0f} s ({len(events)} events): {state['answer'][:120]}")
    print(f"  cited {[c['label'] for c in state['citations']]}, band {state.get('band')}")
    print(f"  threads ana sees: {len(await client.threads.search(limit=50))}")

asyncio.run(main())
ASK
}
ask
answered_by() { sed -n 's/.* via //p' "$W/nginx-access.log" | awk -F', ' '{print $NF}' | sort | uniq -c | xargs; }
echo "requests answered by each replica: $(answered_by)"
stop replica2 -KILL  # as when its machine dies
echo "replica 127.0.0.2 killed"
ask
echo "requests answered by each replica: $(answered_by)"
