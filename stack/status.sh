#!/usr/bin/env bash
# Prints each service of the local stack: running/stopped (a process that stack/up.sh
# started), pid, port, and whether it answers (Kafka metadata, registry subjects, Redis
# PING, MinIO readiness). Exits 0 only when all four answer.
set -euo pipefail

# shellcheck source=stack/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

printf '%-9s %-8s %-8s %-6s %-8s %s\n' service state pid port answers endpoint
all=0
for svc in "${SERVICES[@]}"; do
  state=stopped
  pid=-
  if p="$(svc_pid "$svc")"; then
    state=running
    pid="$p"
  fi
  answers=no
  if svc_answers "$svc"; then
    answers=yes
  else
    all=1
  fi
  case "$svc" in
    kafka) endpoint="$OZ0_KAFKA_BROKERS" ;;
    registry) endpoint="$OZ0_REGISTRY_URL" ;;
    redis) endpoint="$OZ0_REDIS_URL" ;;
    minio) endpoint="$OZ0_MINIO_URL" ;;
  esac
  printf '%-9s %-8s %-8s %-6s %-8s %s\n' "$svc" "$state" "$pid" "$(svc_port "$svc")" "$answers" "$endpoint"
done
printf 'cache: %s (logs in %s)\n' "$OZ0_STACK_HOME" "$LOG_DIR"
exit "$all"
