#!/usr/bin/env bash
# Endpoints of the local stack (stack/up.sh), as the TypeScript code reads them.
#
#   source stack/env.sh          # exports the OZ0_* endpoint variables into this shell
#   bash stack/env.sh            # prints KEY=value lines (e.g. >> "$GITHUB_ENV")
#   bash stack/env.sh --export   # prints `export KEY=value` lines, for eval
#
# Every value derives from the port variables below, which are overridable from the
# environment. The MinIO credentials are local development defaults, not secrets.
# OZ0_STACK_REDIS=cluster points OZ0_REDIS_URL at the stack's Redis Cluster (three masters
# on $OZ0_REDIS_CLUSTER_PORT and the two ports after it, `stack/up.sh --redis-cluster`)
# instead of the single node; OZ0_REDIS_CLUSTER_URL names the cluster either way.
# OZ0_STACK_KAFKA=cluster likewise points OZ0_KAFKA_BROKERS at the stack's Kafka cluster (three
# KRaft nodes on $OZ0_KAFKA_CLUSTER_PORT and the two ports after it, `stack/up.sh
# --kafka-cluster`); OZ0_KAFKA_CLUSTER_BROKERS names it either way. The schema registry stays
# on the single node.

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
fi

OZ0_KAFKA_PORT="${OZ0_KAFKA_PORT:-19092}"
OZ0_KAFKA_CONTROLLER_PORT="${OZ0_KAFKA_CONTROLLER_PORT:-19093}"
OZ0_KAFKA_CLUSTER_PORT="${OZ0_KAFKA_CLUSTER_PORT:-19192}"
OZ0_KAFKA_CLUSTER_CONTROLLER_PORT="${OZ0_KAFKA_CLUSTER_CONTROLLER_PORT:-19292}"
OZ0_REGISTRY_PORT="${OZ0_REGISTRY_PORT:-18081}"
OZ0_REGISTRY_MGMT_PORT="${OZ0_REGISTRY_MGMT_PORT:-18091}"
OZ0_REDIS_PORT="${OZ0_REDIS_PORT:-16379}"
OZ0_REDIS_CLUSTER_PORT="${OZ0_REDIS_CLUSTER_PORT:-17000}"
OZ0_MINIO_PORT="${OZ0_MINIO_PORT:-19000}"
OZ0_MINIO_CONSOLE_PORT="${OZ0_MINIO_CONSOLE_PORT:-19001}"

export OZ0_KAFKA_CLUSTER_BROKERS="127.0.0.1:${OZ0_KAFKA_CLUSTER_PORT},127.0.0.1:$((OZ0_KAFKA_CLUSTER_PORT + 1)),127.0.0.1:$((OZ0_KAFKA_CLUSTER_PORT + 2))"
case "${OZ0_STACK_KAFKA:-node}" in
  node) export OZ0_KAFKA_BROKERS="127.0.0.1:${OZ0_KAFKA_PORT}" ;;
  cluster) export OZ0_KAFKA_BROKERS="$OZ0_KAFKA_CLUSTER_BROKERS" ;;
  *)
    printf 'stack: OZ0_STACK_KAFKA=%s: use node (one Kafka node, the default) or cluster (three)\n' "$OZ0_STACK_KAFKA" >&2
    return 2 2>/dev/null || exit 2
    ;;
esac
export OZ0_REGISTRY_URL="http://127.0.0.1:${OZ0_REGISTRY_PORT}/apis/ccompat/v7"
export OZ0_REDIS_CLUSTER_URL="redis://127.0.0.1:${OZ0_REDIS_CLUSTER_PORT},redis://127.0.0.1:$((OZ0_REDIS_CLUSTER_PORT + 1)),redis://127.0.0.1:$((OZ0_REDIS_CLUSTER_PORT + 2))"
case "${OZ0_STACK_REDIS:-node}" in
  node) export OZ0_REDIS_URL="redis://127.0.0.1:${OZ0_REDIS_PORT}" ;;
  cluster) export OZ0_REDIS_URL="$OZ0_REDIS_CLUSTER_URL" ;;
  *)
    printf 'stack: OZ0_STACK_REDIS=%s: use node (one Redis, the default) or cluster (three masters)\n' "$OZ0_STACK_REDIS" >&2
    return 2 2>/dev/null || exit 2
    ;;
esac
export OZ0_MINIO_URL="http://127.0.0.1:${OZ0_MINIO_PORT}"
export OZ0_MINIO_ACCESS_KEY="${OZ0_MINIO_ACCESS_KEY:-oz0admin}"
export OZ0_MINIO_SECRET_KEY="${OZ0_MINIO_SECRET_KEY:-oz0-local-secret}"

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  oz0_env_prefix=""
  if [[ "${1:-}" == "--export" ]]; then
    oz0_env_prefix="export "
  fi
  for oz0_env_name in OZ0_KAFKA_BROKERS OZ0_KAFKA_CLUSTER_BROKERS OZ0_REGISTRY_URL OZ0_REDIS_URL OZ0_REDIS_CLUSTER_URL \
    OZ0_MINIO_URL OZ0_MINIO_ACCESS_KEY OZ0_MINIO_SECRET_KEY; do
    printf '%s%s=%s\n' "$oz0_env_prefix" "$oz0_env_name" "${!oz0_env_name}"
  done
fi
