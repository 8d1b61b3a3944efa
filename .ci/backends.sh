# shellcheck shell=bash
# Sourced by .ci/run: starts a private redis-server and FerretDB (SQLite) on free loopback
# ports and exports REDIS_URL / MONGODB_URL for the contract tests, and a Redis Cluster (3
# primaries, a replica each) and a Sentinel setup (primary, replica, 3 Sentinels), exported as
# REDIS_CLUSTER_URL / REDIS_SENTINEL_URL. The caller does
#   source .ci/backends.sh && trap stop_backends EXIT
# It never touches a Redis or MongoDB the machine may already run (e.g. on 6379/27017).

FERRETDB_VERSION="${FERRETDB_VERSION:-v1.24.2}"

_backends_log() { echo "[backends] $*" >&2; }

# True when something accepts TCP connections on 127.0.0.1:$1.
_backends_port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A free port below Linux's ephemeral range (32768 and up), where no outgoing connection can
# take it between this check and the server's bind. With an offset (a Redis Cluster node's bus
# listens on its port + 10000), that port must be free and below the range too.
_backends_free_port() {
  local offset=${1:-0} port
  for _ in $(seq 1 200); do
    port=$((10000 + RANDOM % (22768 - offset)))
    if ! _backends_port_open "$port" && { [ "$offset" -eq 0 ] || ! _backends_port_open $((port + offset)); }; then
      echo "$port"
      return 0
    fi
  done
  return 1
}

_backends_wait_port() {
  local port=$1 pid=$2 name=$3
  for _ in $(seq 1 300); do
    _backends_port_open "$port" && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      _backends_log "$name exited before accepting connections; its log:"
      cat "$BACKENDS_DIR/$name.log" >&2 || true
      return 1
    fi
    sleep 0.1
  done
  _backends_log "$name did not accept connections on port $port within 30 s"
  return 1
}

_backends_install_redis() {
  command -v redis-server >/dev/null 2>&1 && return 0
  _backends_log "installing redis-server"
  # Only refresh the package lists when the package is not known yet.
  if ! apt-cache show redis-server >/dev/null 2>&1; then
    apt-get update -qq || return 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null || return 1
  # The Debian package starts a system service on 6379; the tests never use it.
}

_backends_build_ferretdb() {
  # A binary built without build/version/version.txt panics at start, so check it runs.
  if command -v ferretdb >/dev/null 2>&1 && ferretdb --version >/dev/null 2>&1; then
    return 0
  fi
  command -v go >/dev/null 2>&1 || { _backends_log "go is required to build FerretDB"; return 1; }
  _backends_log "building FerretDB $FERRETDB_VERSION"
  local json dir src bin
  # `go install ...@version` fails here: its deprecation lookup is refused, so download the
  # module and build it from a copy (the module cache is read-only, and the build needs a
  # generated version.txt that the published module does not ship).
  json=$(go mod download -json "github.com/FerretDB/FerretDB@$FERRETDB_VERSION") || return 1
  dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -n 1)
  [ -d "$dir" ] || { _backends_log "no module dir in: $json"; return 1; }
  src=$(mktemp -d)
  cp -r "$dir"/. "$src"/ && chmod -R u+w "$src" || return 1
  echo "$FERRETDB_VERSION" >"$src/build/version/version.txt"
  bin="$(go env GOPATH)/bin"
  mkdir -p "$bin"
  (cd "$src" && go build -buildvcs=false -o "$bin/ferretdb" ./cmd/ferretdb) || return 1
  rm -rf "$src"
  case ":$PATH:" in *":$bin:"*) ;; *) export PATH="$bin:$PATH" ;; esac
}

# The servers to stop, one pid a line in a file: servers started inside a command
# substitution (`port=$(...)`, a subshell) could not add to a shell variable.
_backends_track() {
  echo "$1" >>"$BACKENDS_DIR/pids"
}

stop_backends() {
  local pid pids=""
  [ -n "${BACKENDS_DIR:-}" ] && [ -f "$BACKENDS_DIR/pids" ] && pids=$(cat "$BACKENDS_DIR/pids")
  for pid in $pids; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in $pids; do
    # Wait (bounded) so the data dir can be removed after the process let go of it.
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  [ -n "${BACKENDS_DIR:-}" ] && rm -rf "$BACKENDS_DIR"
  BACKENDS_DIR=""
}

start_backends() {
  # Go may be installed but not on a non-login shell's PATH.
  for d in /usr/local/go/bin "$HOME/go/bin"; do
    [ -d "$d" ] && case ":$PATH:" in *":$d:"*) ;; *) export PATH="$PATH:$d" ;; esac
  done
  _backends_install_redis || { _backends_log "cannot install redis-server"; return 1; }
  _backends_build_ferretdb || { _backends_log "cannot build FerretDB"; return 1; }

  BACKENDS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/backends.XXXXXX")
  mkdir -p "$BACKENDS_DIR/redis" "$BACKENDS_DIR/ferretdb"

  local redis_port ferret_port
  redis_port=$(_backends_free_port) || return 1
  redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$BACKENDS_DIR/redis" >"$BACKENDS_DIR/redis.log" 2>&1 &
  _backends_track $!
  _backends_wait_port "$redis_port" "$!" redis || return 1

  ferret_port=$(_backends_free_port) || return 1
  # --debug-addr=- : the default debug listener (127.0.0.1:8088) would clash with the
  # FerretDB instances the outage tests start themselves.
  ferretdb --handler=sqlite --sqlite-url="file:$BACKENDS_DIR/ferretdb/" \
    --state-dir="$BACKENDS_DIR/ferretdb" --listen-addr="127.0.0.1:$ferret_port" \
    --debug-addr=- --telemetry=disable --log-level=warn >"$BACKENDS_DIR/ferretdb.log" 2>&1 &
  _backends_track $!
  _backends_wait_port "$ferret_port" "$!" ferretdb || return 1

  export REDIS_URL="redis://127.0.0.1:$redis_port"
  export MONGODB_URL="mongodb://127.0.0.1:$ferret_port/tokenservice"
  _backends_log "redis-server on $REDIS_URL, FerretDB on $MONGODB_URL"

  _backends_start_redis_cluster || return 1
  _backends_start_redis_sentinel || return 1
}

# Starts redis-server on a free port with extra arguments; prints the port. Another program
# may still take the port first: then it tries again on another one.
_backends_redis_on_free_port() {
  local name=$1 port offset=0
  shift
  case " $* " in *" --cluster-enabled yes "*) offset=10000 ;; esac
  for _ in 1 2 3; do
    rm -rf "${BACKENDS_DIR:?}/$name" && mkdir -p "$BACKENDS_DIR/$name"
    port=$(_backends_free_port "$offset") || return 1
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
      --dir "$BACKENDS_DIR/$name" "$@" >"$BACKENDS_DIR/$name.log" 2>&1 &
    _backends_track $!
    if _backends_wait_port "$port" "$!" "$name" >&2; then
      echo "$port"
      return 0
    fi
  done
  return 1
}

# Waits (bounded) until `redis-cli -p $1 $2...` prints something matching the last argument.
_backends_wait_redis() {
  local port=$1 pattern=$2
  shift 2
  for _ in $(seq 1 150); do
    redis-cli -p "$port" "$@" 2>/dev/null | grep -q "$pattern" && return 0
    sleep 0.1
  done
  _backends_log "redis on $port never answered '$*' with $pattern"
  return 1
}

# A real Redis Cluster of 3 shards, each a primary and a replica (the service's writes wait for
# one replica of their shard by default); exports REDIS_CLUSTER_URL.
_backends_start_redis_cluster() {
  local ports=() port
  for n in 1 2 3 4 5 6; do
    port=$(_backends_redis_on_free_port "cluster$n" --cluster-enabled yes \
      --cluster-config-file "$BACKENDS_DIR/cluster$n/nodes.conf" --cluster-node-timeout 2000 \
      --repl-diskless-sync-delay 0) || return 1
    ports+=("$port")
  done
  redis-cli --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 1 --cluster-yes \
    >"$BACKENDS_DIR/cluster-create.log" 2>&1 || { cat "$BACKENDS_DIR/cluster-create.log" >&2; return 1; }
  for port in "${ports[@]}"; do
    _backends_wait_redis "$port" cluster_state:ok cluster info || return 1
    # A replica confirms writes only once in sync; a primary answers role:master here.
    _backends_wait_redis "$port" 'role:master\|master_link_status:up' info replication || return 1
  done
  export REDIS_CLUSTER_URL="redis+cluster://127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}"
  _backends_log "Redis Cluster on $REDIS_CLUSTER_URL (3 primaries, a replica each)"
}

# A primary, a replica and 3 Sentinels watching them; exports REDIS_SENTINEL_URL.
_backends_start_redis_sentinel() {
  local primary replica sentinels=() port conf
  primary=$(_backends_redis_on_free_port sentinel-primary --repl-diskless-sync-delay 0) || return 1
  replica=$(_backends_redis_on_free_port sentinel-replica --repl-diskless-sync-delay 0 \
    --replicaof 127.0.0.1 "$primary") || return 1
  for n in 1 2 3; do
    port=$(_backends_free_port) || return 1
    conf="$BACKENDS_DIR/sentinel$n.conf"
    printf '%s\n' "port $port" "bind 127.0.0.1" "dir $BACKENDS_DIR" \
      "sentinel monitor tokenservice 127.0.0.1 $primary 2" \
      "sentinel down-after-milliseconds tokenservice 1000" \
      "sentinel failover-timeout tokenservice 5000" >"$conf"
    redis-server "$conf" --sentinel >"$BACKENDS_DIR/sentinel$n.log" 2>&1 &
    _backends_track $!
    _backends_wait_port "$port" "$!" "sentinel$n" || return 1
    sentinels+=("$port")
  done
  _backends_wait_redis "$replica" master_link_status:up info replication || return 1
  for port in "${sentinels[@]}"; do
    _backends_wait_redis "$port" "$primary" sentinel get-master-addr-by-name tokenservice || return 1
  done
  export REDIS_SENTINEL_URL="redis+sentinel://127.0.0.1:${sentinels[0]},127.0.0.1:${sentinels[1]},127.0.0.1:${sentinels[2]}/tokenservice"
  _backends_log "Redis Sentinel on $REDIS_SENTINEL_URL (primary $primary, replica $replica)"
}

start_backends || { stop_backends; false; }
