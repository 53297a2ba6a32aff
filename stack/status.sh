#!/usr/bin/env bash
# Prints each service of the local stack: running/stopped (a process that stack/up.sh
# started), pid, port, and whether it answers (Kafka metadata, registry subjects, Redis
# PING, MinIO readiness). Exits 0 only when all four answer; with OZ0_STACK_REDIS=cluster the
# Redis Cluster profile must answer too (cluster_state:ok on its three masters), and with
# OZ0_STACK_KAFKA=cluster the Kafka cluster profile (each of its three nodes lists the three
# brokers); a profile is listed whenever one of its nodes runs.
set -euo pipefail

# shellcheck source=stack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

printf '%-13s %-8s %-8s %-6s %-8s %s\n' service state pid port answers endpoint
all=0
shown=("${SERVICES[@]}")
cluster_running=0
for node in $(redis_cluster_nodes); do
  svc_pid "$node" >/dev/null && cluster_running=1
done
if redis_cluster_wanted || ((cluster_running)); then
  shown+=(redis-cluster)
fi
kafka_cluster_running=0
for node in $(kafka_cluster_nodes); do
  svc_pid "$node" >/dev/null && kafka_cluster_running=1
done
if kafka_cluster_wanted || ((kafka_cluster_running)); then
  shown+=(kafka-cluster)
fi
for svc in "${shown[@]}"; do
  state=stopped
  pid=-
  if p="$(svc_pid "$svc")"; then
    state=running
    pid="$p"
  fi
  answers=no
  if svc_answers "$svc"; then
    answers=yes
  elif [[ "$svc" == redis-cluster ]]; then
    redis_cluster_wanted && all=1
  elif [[ "$svc" == kafka-cluster ]]; then
    kafka_cluster_wanted && all=1
  else
    all=1
  fi
  case "$svc" in
    kafka) endpoint="127.0.0.1:$OZ0_KAFKA_PORT" ;;
    registry) endpoint="$OZ0_REGISTRY_URL" ;;
    redis) endpoint="$OZ0_REDIS_URL" ;;
    minio) endpoint="$OZ0_MINIO_URL" ;;
    redis-cluster) endpoint="$OZ0_REDIS_CLUSTER_URL" ;;
    kafka-cluster) endpoint="$OZ0_KAFKA_CLUSTER_BROKERS" ;;
  esac
  printf '%-13s %-8s %-8s %-6s %-8s %s\n' "$svc" "$state" "$pid" "$(svc_port "$svc")" "$answers" "$endpoint"
done
printf 'cache: %s (logs in %s)\n' "$OZ0_STACK_HOME" "$LOG_DIR"
exit "$all"
