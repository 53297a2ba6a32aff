/**
 * The local stack's endpoints and its documented development credentials, as `stack/env.sh`
 * sets them (`stack/README.md`). They are public and protect nothing: the local stack listens on
 * loopback only. Every value is overridden by its `OZ0_*` variable (`docs/security.md`); these are
 * the only credentials written in the code (`test/unit/security/secrets-in-code.test.ts`).
 */
export const LOCAL_STACK = {
  OZ0_KAFKA_BROKERS: "127.0.0.1:19092",
  /** The Kafka cluster profile's three brokers (`stack/up.sh --kafka-cluster`). */
  OZ0_KAFKA_CLUSTER_BROKERS: "127.0.0.1:19192,127.0.0.1:19193,127.0.0.1:19194",
  OZ0_REGISTRY_URL: "http://127.0.0.1:18081/apis/ccompat/v7",
  OZ0_REDIS_URL: "redis://127.0.0.1:16379",
  /** The cluster profile's seed nodes (`stack/up.sh --redis-cluster`). */
  OZ0_REDIS_CLUSTER_URL: "redis://127.0.0.1:17000,redis://127.0.0.1:17001,redis://127.0.0.1:17002",
  OZ0_MINIO_URL: "http://127.0.0.1:19000",
  OZ0_MINIO_ACCESS_KEY: "oz0admin",
  OZ0_MINIO_SECRET_KEY: "oz0-local-secret",
} as const;
