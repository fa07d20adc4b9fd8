#!/usr/bin/env bash
# The compose topology on one machine, without Docker: Debian's redis-server (AOF on),
# three `solrace serve` nodes on one Redis, HAProxy in front (deploy/haproxy.cfg).
#
#   deploy/local-cluster.sh start        start whatever is not running, wait until healthy
#   deploy/local-cluster.sh status       what runs, and each /healthz
#   deploy/local-cluster.sh stop         SIGTERM everything it started (SIGKILL after 10 s)
#   deploy/local-cluster.sh kill-node N  SIGKILL node N (a crash drill); `start` brings it back
#   deploy/local-cluster.sh --help       the commands, the folder and the ports
#
# Everything lives in $SOLRACE_CLUSTER_DIR (default ./cluster, made by `start`): pid files in
# run/, logs in logs/, Redis's AOF in redis/, each node's folder in nodeN/, the shared token
# secret in secret. Ports: SOLRACE_LB_PORT (8080), SOLRACE_NODE_PORT (8771, 8772, 8773),
# SOLRACE_REDIS_PORT (6390). Needs redis-server, haproxy and solrace installed.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
dir="${SOLRACE_CLUSTER_DIR:-./cluster}"
lb_port="${SOLRACE_LB_PORT:-8080}"
node_port="${SOLRACE_NODE_PORT:-8771}"
redis_port="${SOLRACE_REDIS_PORT:-6390}"
python="${PYTHON:-python3}"
nodes=(1 2 3)
wait_s=15

# Only `start` makes the folder: status, stop or help elsewhere leave nothing behind.
if [ -d "$dir" ]; then dir="$(cd "$dir" && pwd)"; fi
redis_url="redis://127.0.0.1:${redis_port}/0"

die() { echo "local-cluster: $*" >&2; exit 1; }
say() { echo "local-cluster: $*"; }

port_of() { echo $((node_port + $1 - 1)); }

# A pid file names a live process of ours only if that pid still runs what we started.
running_pid() {
    local name=$1 marker=$2 pid
    [ -f "$dir/run/$name.pid" ] || return 1
    pid="$(cat "$dir/run/$name.pid")"
    [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$marker" || return 1
    echo "$pid"
}

healthy() {  # healthy PORT: GET /healthz answers 200
    if command -v curl >/dev/null; then
        curl -fsS -m 2 -o /dev/null "http://127.0.0.1:$1/healthz" 2>/dev/null
        return
    fi
    "$python" - "$1" <<'PY' >/dev/null 2>&1
import sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=2) as reply:
    sys.exit(0 if reply.status == 200 else 1)
PY
}

redis_up() {
    if command -v redis-cli >/dev/null; then
        [ "$(redis-cli -p "$redis_port" ping 2>/dev/null)" = PONG ]
        return
    fi
    "$python" - "$redis_port" <<'PY' >/dev/null 2>&1
import sys, redis
sys.exit(0 if redis.Redis(port=int(sys.argv[1]), socket_timeout=1).ping() else 1)
PY
}

port_taken() {  # port_taken PORT: something already listens on 127.0.0.1:PORT
    "$python" - "$1" <<'PY'
import socket, sys
with socket.socket() as s:
    s.settimeout(1)
    sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1]))) == 0 else 1)
PY
}

need_haproxy() {  # haproxy on PATH, or a line saying how to get it there
    command -v haproxy >/dev/null && return
    if [ -x /usr/sbin/haproxy ]; then  # Debian's place, not on an ordinary user's PATH
        die "no haproxy on PATH, but /usr/sbin/haproxy is installed: run PATH=\"\$PATH:/usr/sbin\" $0 start"
    fi
    die "no haproxy (Debian: apt-get install haproxy)"
}

free_or_die() {  # free_or_die PORT WHAT: a port taken by another program stops the start
    if port_taken "$1"; then
        die "port $1 ($2) is taken by another program: stop it, or move the cluster's ports (SOLRACE_LB_PORT, SOLRACE_NODE_PORT, SOLRACE_REDIS_PORT)"
    fi
}

up() {  # up NAME CHECK...: the process we just started still runs, and CHECK succeeds
    local name=$1; shift
    alive "$(cat "$dir/run/$name.pid")" || die "$name exited as it started (see $dir/logs/$name.log)"
    "$@"
}

wait_for() {  # wait_for WHAT COMMAND...: poll until it succeeds, at most $wait_s seconds
    local what=$1; shift
    local deadline=$((SECONDS + wait_s))
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || die "$what did not come up in ${wait_s} s (see $dir/logs)"
        sleep 0.05
    done
}

start_redis() {
    if running_pid redis "redis-server" >/dev/null; then return; fi
    command -v redis-server >/dev/null || die "no redis-server (Debian: apt-get install redis-server)"
    free_or_die "$redis_port" redis
    # AOF with fsync before every reply: an acknowledged move survives a crash of Redis too.
    nohup redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$dir/redis" \
        --appendonly yes --appendfsync always --save '' --protected-mode yes \
        >>"$dir/logs/redis.log" 2>&1 </dev/null &
    echo $! >"$dir/run/redis.pid"
    wait_for "redis on :$redis_port" up redis redis_up
    say "redis on 127.0.0.1:$redis_port (AOF in $dir/redis)"
}

start_node() {
    local n=$1 port
    port="$(port_of "$n")"
    if running_pid "node$n" "solrace" >/dev/null; then return; fi
    free_or_die "$port" "node $n"
    mkdir -p "$dir/node$n"
    # Every node signs tokens with the same secret, so a player may reconnect to any node.
    # Clients arrive from HAProxy's address: it limits connections per client, not the node.
    # Other SOLRACE_* settings (SOLRACE_ADMIN_TOKEN for tournaments, ...) come from our caller.
    SOLRACE_STORE="$redis_url" SOLRACE_SECRET="$(cat "$dir/secret")" \
        SOLRACE_MAX_CONNECTIONS_PER_ADDRESS=0 \
        nohup "$python" -m solrace.cli serve --host 127.0.0.1 --port "$port" \
        --data-dir "$dir/node$n" >>"$dir/logs/node$n.log" 2>&1 </dev/null &
    echo $! >"$dir/run/node$n.pid"
    wait_for "node $n on :$port" up "node$n" healthy "$port"
    say "node $n on ws://127.0.0.1:$port"
}

start_haproxy() {
    if running_pid haproxy "haproxy" >/dev/null; then return; fi
    need_haproxy
    export SOLRACE_LB_BIND="127.0.0.1:$lb_port"
    export SOLRACE_NODE1="127.0.0.1:$(port_of 1)"
    export SOLRACE_NODE2="127.0.0.1:$(port_of 2)"
    export SOLRACE_NODE3="127.0.0.1:$(port_of 3)"
    haproxy -c -q -f "$here/haproxy.cfg" || die "deploy/haproxy.cfg does not check"
    free_or_die "$lb_port" haproxy
    nohup haproxy -f "$here/haproxy.cfg" >>"$dir/logs/haproxy.log" 2>&1 </dev/null &
    echo $! >"$dir/run/haproxy.pid"
    wait_for "haproxy on :$lb_port" up haproxy healthy "$lb_port"
    say "haproxy on ws://127.0.0.1:$lb_port (clients connect here)"
}

cmd_start() {
    "$python" -c 'import solrace.server.app' 2>/dev/null \
        || die "solrace is not importable by $python (pip install -e .)"
    # Every program is looked for before any starts: a missing one leaves nothing running.
    command -v redis-server >/dev/null || die "no redis-server (Debian: apt-get install redis-server)"
    need_haproxy
    # And every port the parts not running yet will take: one taken leaves nothing started.
    running_pid redis "redis-server" >/dev/null || free_or_die "$redis_port" redis
    for n in "${nodes[@]}"; do
        running_pid "node$n" "solrace" >/dev/null || free_or_die "$(port_of "$n")" "node $n"
    done
    running_pid haproxy "haproxy" >/dev/null || free_or_die "$lb_port" haproxy
    mkdir -p "$dir/run" "$dir/logs" "$dir/redis"
    dir="$(cd "$dir" && pwd)"
    if [ ! -f "$dir/secret" ]; then
        (umask 077 && "$python" -c 'import secrets; print(secrets.token_hex(32))' >"$dir/secret")
    fi
    start_redis
    for n in "${nodes[@]}"; do start_node "$n"; done
    start_haproxy
    say "up: solrace play --server ws://127.0.0.1:$lb_port (logs: $dir/logs)"
}

alive() {  # alive PID: running, and not a zombie waiting for init to reap it
    [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

stop_one() {  # stop_one NAME MARKER: SIGTERM, wait, then SIGKILL
    local name=$1 marker=$2 pid deadline
    if pid="$(running_pid "$name" "$marker")"; then
        kill -TERM "$pid" 2>/dev/null || true
        deadline=$((SECONDS + 10))
        while alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.05; done
        if alive "$pid"; then
            say "$name did not stop on SIGTERM: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
        say "stopped $name"
    fi
    rm -f "$dir/run/$name.pid"
}

cmd_stop() {
    stop_one haproxy haproxy
    for n in "${nodes[@]}"; do stop_one "node$n" solrace; done
    stop_one redis redis-server  # last: nodes flush to it while they stop
}

cmd_status() {
    local all=0 pid port
    report() {  # report NAME MARKER HEALTH-COMMAND...
        local name=$1 marker=$2; shift 2
        if pid="$(running_pid "$name" "$marker")"; then
            if "$@"; then say "$name: running (pid $pid), healthy"
            else say "$name: running (pid $pid), NOT healthy"; all=1; fi
        else
            say "$name: stopped"; all=1
        fi
    }
    report redis redis-server redis_up
    for n in "${nodes[@]}"; do
        port="$(port_of "$n")"
        report "node$n" solrace healthy "$port"
    done
    report haproxy haproxy healthy "$lb_port"
    return "$all"
}

cmd_kill_node() {
    local n=${1:-} pid
    [[ "$n" =~ ^[123]$ ]] || die "kill-node needs 1, 2 or 3"
    pid="$(running_pid "node$n" solrace)" || die "node $n is not running"
    kill -KILL "$pid"
    rm -f "$dir/run/node$n.pid"
    say "node $n killed (SIGKILL); haproxy marks it down within ~4 s"
}

usage() {
    cat <<EOF
usage: $0 start|stop|status|kill-node N
  start        start whatever is not running (Redis, three nodes, HAProxy), wait until healthy
  status       what runs, and each /healthz; exit 1 if anything is down
  stop         SIGTERM everything it started (SIGKILL after 10 s)
  kill-node N  SIGKILL node N (1, 2 or 3: a crash drill); start brings it back
Files in \$SOLRACE_CLUSTER_DIR (now $dir); ports SOLRACE_LB_PORT ($lb_port),
SOLRACE_NODE_PORT ($node_port and the next two), SOLRACE_REDIS_PORT ($redis_port). deploy/README.md.
EOF
}

case "${1:-}" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    kill-node) cmd_kill_node "${2:-}" ;;
    -h | --help | help) usage ;;
    *) die "usage: $0 start|stop|status|kill-node N ($0 --help says more)" ;;
esac
