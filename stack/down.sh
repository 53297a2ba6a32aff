#!/usr/bin/env bash
# Stops the local stack started by stack/up.sh: only the processes it started (by their pid
# files, checking that each pid still is that process), the registry before Kafka. Each gets
# SIGTERM, a bounded wait, then SIGKILL. Removes the pid files.
#   bash stack/down.sh            # stop; data is kept
#   bash stack/down.sh --purge    # stop and delete the data dirs (installs are kept)
#   bash stack/down.sh --only redis [--only kafka] [--kill]
#                                 # stop only these services (drills), with SIGKILL at once if --kill
#   bash stack/down.sh --only redis-cluster
#                                 # stop the Redis Cluster profile's nodes (stopped by a plain down too)
#   bash stack/down.sh --only kafka-cluster
#                                 # stop the Kafka cluster profile's three nodes, all at once (a node
#                                 # left alone without a quorum cannot finish its controlled shutdown)
#   bash stack/down.sh --only kafka-cluster-19193 [--kill]
#                                 # stop one node of it (the broker drills); up.sh --only kafka-cluster
#                                 # starts it again
set -euo pipefail

# shellcheck source=stack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

purge=0
kill_now=0
only=()
while (($# > 0)); do
  case "$1" in
    --purge) purge=1 ;;
    --kill) kill_now=1 ;;
    --only)
      shift
      case "${1:-}" in
        kafka | registry | redis | minio | redis-cluster | kafka-cluster) only+=("$1") ;;
        # one node of the Kafka cluster (the broker drills stop and kill one at a time)
        kafka-cluster-[0-9]*) only+=("$1") ;;
        *)
          printf 'stack/down.sh: --only takes kafka, registry, redis, minio, redis-cluster, kafka-cluster or kafka-cluster-<port>, not %s\n' "${1:-nothing}" >&2
          exit 2
          ;;
      esac
      ;;
    -h | --help)
      sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      printf 'stack/down.sh: unknown argument %s (use --purge, --only <service>, --kill)\n' "$1" >&2
      exit 2
      ;;
  esac
  shift
done
if ((purge)) && ((${#only[@]} > 0)); then
  printf 'stack/down.sh: --purge stops everything; it does not go with --only\n' >&2
  exit 2
fi

# selected <service>: true when the service is to be stopped (a cluster node with its profile)
selected() {
  local s
  ((${#only[@]} == 0)) && return 0
  for s in "${only[@]}"; do [[ "$s" == "$1" || ("$s" == redis-cluster && "$1" == redis-cluster-*) || ("$s" == kafka-cluster && "$1" == kafka-cluster-*) ]] && return 0; done
  return 1
}

mkdir -p "$RUN_DIR"
exec 9>"$RUN_DIR/stack.lock"
if ! flock -w 10 9; then
  warn "the stack lock is held (an up still running?); stopping anyway"
fi

# stop_service <service> <grace seconds>
stop_service() {
  local svc="$1" grace="$2" pidf pid t0="$EPOCHREALTIME"
  selected "$svc" || return 0
  pidf="$(pid_file "$svc")"
  if ! pid="$(svc_pid "$svc")"; then
    if [[ -e "$pidf" ]]; then
      say "$svc: not running (stale pid file removed)"
      rm -f "$pidf"
    else
      say "$svc: not running"
    fi
    return 0
  fi
  if ((kill_now)); then
    say "$svc: killing pid $pid (SIGKILL)"
    kill -KILL "$pid" 2>/dev/null || true
    grace=10
  else
    say "$svc: stopping pid $pid (SIGTERM, up to $grace s)"
    kill -TERM "$pid" 2>/dev/null || true
  fi
  local deadline=$((SECONDS + grace))
  while pid_matches "$svc" "$pid" && ((SECONDS < deadline)); do
    sleep 0.2
  done
  if pid_matches "$svc" "$pid"; then
    warn "$svc: pid $pid still running after $grace s, sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    deadline=$((SECONDS + 10))
    while pid_matches "$svc" "$pid" && ((SECONDS < deadline)); do
      sleep 0.2
    done
    if pid_matches "$svc" "$pid"; then
      printf 'stack: %s: pid %s survived SIGKILL\n' "$svc" "$pid" >&2
      return 1
    fi
  fi
  rm -f "$pidf"
  say "$svc: stopped ($(since "$t0") s)"
}

step "stopping the local stack in $OZ0_STACK_HOME"
status=0
# the registry first: with Kafka gone it keeps retrying and ignores SIGTERM for a while
stop_service registry 20 || status=1
stop_service minio 15 || status=1
stop_service redis 15 || status=1
for node in $(redis_cluster_nodes); do
  # the cluster profile only when it was started, so a plain down says nothing of it otherwise
  if [[ -e "$(pid_file "$node")" ]] || [[ " ${only[*]} " == *" redis-cluster "* ]]; then
    stop_service "$node" 15 || status=1
  fi
done
# the Kafka cluster's nodes together: stopped one after another, the last would wait for a
# quorum that is gone
cluster_stops=()
for node in $(kafka_cluster_nodes); do
  if [[ -e "$(pid_file "$node")" ]] || [[ " ${only[*]} " == *" kafka-cluster "* ]]; then
    stop_service "$node" 45 &
    cluster_stops+=($!)
  fi
done
for stop in "${cluster_stops[@]}"; do
  wait "$stop" || status=1
done
stop_service kafka 45 || status=1

if ((purge)); then
  if ((status != 0)); then
    printf 'stack: not purging: some service did not stop\n' >&2
    exit 1
  fi
  for svc in "${SERVICES[@]}" redis-cluster kafka-cluster; do
    if [[ -d "$DATA_DIR/$svc" ]]; then
      rm -rf "${DATA_DIR:?}/$svc"
      say "$svc: data deleted ($DATA_DIR/$svc)"
    fi
  done
fi
step "stack is down ($(elapsed) s)"
exit "$status"
