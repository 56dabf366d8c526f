#!/usr/bin/env bash
# A tqserve fleet on one machine: N replicas on loopback ports, each with its own store.dir, behind HAProxy with
# prefix affinity (deploy/haproxy/haproxy.cfg). Or HAProxy alone in front of replicas on other machines.
#
#   deploy/haproxy/fleet.sh up [N]               start N replicas (default 2) and HAProxy; returns when all are ready
#   deploy/haproxy/fleet.sh replica I            (re)start replica I alone (after it was stopped or killed)
#   deploy/haproxy/fleet.sh down                 stop HAProxy and the replicas (running requests get the grace period)
#   deploy/haproxy/fleet.sh status               replicas and their state as HAProxy sees them
#   deploy/haproxy/fleet.sh haproxy HOST:PORT... run HAProxy in the foreground in front of existing replicas
#
# Environment (defaults in brackets):
#   FLEET_DIR           run directory: pid files, logs, generated haproxy.cfg, replica store dirs [target/fleet]
#   FLEET_PORT          HAProxy's port, where clients connect [8080]
#   FLEET_STATS_PORT    HAProxy's statistics page, http://127.0.0.1:PORT/stats [8404]
#   FLEET_BASE_PORT     replica I listens on FLEET_BASE_PORT + I - 1 [8081]
#   FLEET_BIND_ADDRESS  address HAProxy listens on [127.0.0.1]; 0.0.0.0 to serve other machines
#   TQSERVE_AFFINITY_BYTES  request-body bytes hashed for prefix affinity [256]
#   FLEET_REPLICA_CMD   command that runs one replica; Spring arguments are appended [./tqserve]
#   FLEET_REPLICA_ARGS  extra arguments for every replica, e.g. "--tqserve.model.path=/models/Qwen2.5-0.5B-Instruct"
#   FLEET_READY_TIMEOUT seconds to wait for a replica to become ready [300]
# HAProxy's runtime API listens on $FLEET_DIR/haproxy.sock (e.g. echo "show sess all" | socat stdio UNIX:...).
# Replicas run with tqserve.api.queue-full-status=503 so that HAProxy (2.6 retries 503, not 429) sends a request
# refused by a full queue to another replica.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
FLEET_DIR="${FLEET_DIR:-$repo/target/fleet}"
FLEET_PORT="${FLEET_PORT:-8080}"
FLEET_STATS_PORT="${FLEET_STATS_PORT:-8404}"
FLEET_BASE_PORT="${FLEET_BASE_PORT:-8081}"
FLEET_BIND_ADDRESS="${FLEET_BIND_ADDRESS:-127.0.0.1}"
FLEET_READY_TIMEOUT="${FLEET_READY_TIMEOUT:-300}"
export TQSERVE_AFFINITY_BYTES="${TQSERVE_AFFINITY_BYTES:-256}"
export FLEET_BIND="$FLEET_BIND_ADDRESS:$FLEET_PORT"
export FLEET_STATS_BIND="127.0.0.1:$FLEET_STATS_PORT"

log() { echo "fleet: $*" >&2; }
die() { log "$*"; exit 1; }

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

replica_port() { echo $((FLEET_BASE_PORT + $1 - 1)); }

# The launcher builds target/tqserve.jar when it is missing or stale; do it once, not in N replicas at the same time.
build_once() {
  if [ -z "${FLEET_REPLICA_CMD:-}" ]; then
    local jar="$repo/target/tqserve.jar"
    if [ ! -f "$jar" ] || [ -n "$(find "$repo/src/main" "$repo/pom.xml" -newer "$jar" -type f -print -quit)" ]; then
      "$repo/tqserve" build
    fi
  fi
}

start_replica() {
  local i="$1" dir="$FLEET_DIR/r$1" port
  port="$(replica_port "$i")"
  if alive "$dir/pid"; then die "replica $i is already running (pid $(cat "$dir/pid"))"; fi
  mkdir -p "$dir/store"
  # shellcheck disable=SC2086 # FLEET_REPLICA_CMD and FLEET_REPLICA_ARGS are word lists
  nohup ${FLEET_REPLICA_CMD:-"$repo/tqserve"} --server.address=127.0.0.1 --server.port="$port" \
    --tqserve.store.dir="$dir/store" --tqserve.api.queue-full-status=503 ${FLEET_REPLICA_ARGS:-} \
    >"$dir/log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  log "replica $i: pid $!, http://127.0.0.1:$port, store $dir/store, log $dir/log"
}

await_ready() {
  local i="$1" port deadline
  port="$(replica_port "$i")"
  deadline=$((SECONDS + FLEET_READY_TIMEOUT))
  until curl -fsS -o /dev/null "http://127.0.0.1:$port/actuator/health/readiness" 2>/dev/null; do
    if ! alive "$FLEET_DIR/r$i/pid"; then tail -n 30 "$FLEET_DIR/r$i/log" >&2; die "replica $i exited"; fi
    if [ "$SECONDS" -ge "$deadline" ]; then die "replica $i not ready after ${FLEET_READY_TIMEOUT}s"; fi
    sleep 0.2 # polling a child process's readiness from a shell script
  done
  log "replica $i ready"
}

# Writes $FLEET_DIR/haproxy.cfg: the shipped configuration plus one server line per "name address:port", and
# HAProxy's admin socket $FLEET_DIR/haproxy.sock (runtime API: "show sess all", "show servers state") when that
# path fits a Unix socket address.
write_config() {
  mkdir -p "$FLEET_DIR"
  local sock="$FLEET_DIR/haproxy.sock"
  {
    cat "$here/haproxy.cfg"
    printf '    server %s %s\n' "$@"
    if [ "${#sock}" -le 100 ]; then printf 'global\n    stats socket "%s" mode 600 level admin\n' "$sock"; fi
  } >"$FLEET_DIR/haproxy.cfg"
  haproxy -c -q -f "$FLEET_DIR/haproxy.cfg" || die "haproxy rejected $FLEET_DIR/haproxy.cfg"
}

stop_pid() { # pid file, seconds to wait after SIGTERM
  local f="$1" wait="$2" pid
  alive "$f" || { rm -f "$f"; return 0; }
  pid="$(cat "$f")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq $((wait * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$f"
}

command -v haproxy >/dev/null || die "haproxy is not installed (Debian/Ubuntu: apt-get install haproxy; macOS: brew install haproxy)"
verb="${1:-}"
case "$verb" in
  up)
    n="${2:-2}"
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "up takes a replica count, not '$n'"
    build_once
    servers=()
    for i in $(seq "$n"); do servers+=("r$i" "127.0.0.1:$(replica_port "$i")"); done
    write_config "${servers[@]}"
    for i in $(seq "$n"); do start_replica "$i"; done
    alive "$FLEET_DIR/haproxy.pid" && die "haproxy is already running (pid $(cat "$FLEET_DIR/haproxy.pid"))"
    nohup haproxy -db -f "$FLEET_DIR/haproxy.cfg" >"$FLEET_DIR/haproxy.log" 2>&1 </dev/null &
    echo $! >"$FLEET_DIR/haproxy.pid"
    log "haproxy: pid $!, http://$FLEET_BIND, statistics http://$FLEET_STATS_BIND/stats"
    for i in $(seq "$n"); do await_ready "$i"; done
    ;;
  replica)
    [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "replica takes a replica number"
    build_once
    start_replica "$2"
    await_ready "$2"
    ;;
  down)
    stop_pid "$FLEET_DIR/haproxy.pid" 5
    for f in "$FLEET_DIR"/r*/pid; do [ -e "$f" ] && stop_pid "$f" 30; done
    log "stopped"
    ;;
  status)
    curl -fsS "http://$FLEET_STATS_BIND/stats;csv" | awk -F, '$1 == "replicas" { print $2, $18 }'
    ;;
  haproxy)
    shift
    [ "$#" -ge 1 ] || die "haproxy takes the replicas' HOST:PORT"
    servers=()
    i=0
    for hp in "$@"; do i=$((i + 1)); servers+=("r$i" "$hp"); done
    write_config "${servers[@]}"
    exec haproxy -db -f "$FLEET_DIR/haproxy.cfg"
    ;;
  *)
    sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
