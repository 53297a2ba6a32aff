import { describe, expect, it } from "vitest";
import { endpointsEnv, endpointsFromEnv, kafkaConfig } from "../../../processors/runner/endpoints.ts";
import { createLogger } from "../../../processors/runner/log.ts";
import { redactSecrets, redactUrl } from "../../../lib/redact.ts";
import { redisOptions, redisWhere } from "../../../store/redis/client.ts";

const quiet = createLogger({}, () => {});

describe("credentials from the environment", () => {
  it("Redis AUTH comes from the URL or from OZ0_REDIS_USERNAME / OZ0_REDIS_PASSWORD, which win; rediss:// turns TLS on", () => {
    expect(redisOptions({ redisUrl: "redis://127.0.0.1:16379" })).toEqual({ host: "127.0.0.1", port: 16379 });
    expect(redisOptions({ redisUrl: "redis://:s%40cret@cache.internal:6380/2" })).toEqual({ host: "cache.internal", port: 6380, db: 2, password: "s@cret" });
    expect(redisOptions({ redisUrl: "redis://svc:from-url@cache:6379" })).toMatchObject({ username: "svc", password: "from-url" });
    const e = endpointsFromEnv({ OZ0_REDIS_URL: "redis://svc:from-url@cache:6379", OZ0_REDIS_USERNAME: "pipeline", OZ0_REDIS_PASSWORD: "from-env" });
    expect(redisOptions(e)).toMatchObject({ username: "pipeline", password: "from-env" });
    expect(redisOptions({ redisUrl: "rediss://cache.example.com:6380" })).toEqual({ host: "cache.example.com", port: 6380, tls: { servername: "cache.example.com" } });
    // Options given by the caller add to these.
    expect(redisOptions({ redisUrl: "redis://h:1" }, { maxRetriesPerRequest: 3 })).toEqual({ host: "h", port: 1, maxRetriesPerRequest: 3 });
  });

  it("the endpoints handed to a child process as its environment read back the same, Redis credentials included", () => {
    const env = { OZ0_KAFKA_BROKERS: "k1:9092,k2:9092", OZ0_REGISTRY_URL: "http://reg:8081", OZ0_REDIS_URL: "redis://r:6379", OZ0_REDIS_USERNAME: "app", OZ0_REDIS_PASSWORD: "pw-1", OZ0_MINIO_URL: "http://m:9000", OZ0_MINIO_ACCESS_KEY: "ak", OZ0_MINIO_SECRET_KEY: "sk" };
    const e = endpointsFromEnv(env);
    expect(endpointsEnv(e)).toEqual(env);
    expect(endpointsFromEnv(endpointsEnv(e))).toEqual(e);
    const { OZ0_REDIS_USERNAME: _u, OZ0_REDIS_PASSWORD: _p, ...plain } = env;
    expect(endpointsEnv(endpointsFromEnv(plain))).toEqual(plain);
  });

  it("a Redis URL that cannot be used is refused without repeating its password", () => {
    expect(() => redisOptions({ redisUrl: "http://:hunter2-pw@cache:6379" })).toThrow(/redis:\/\/ or rediss:\/\//);
    expect(() => redisOptions({ redisUrl: "http://:hunter2-pw@cache:6379" })).not.toThrow(/hunter2-pw/);
    expect(() => redisOptions({ redisUrl: "redis://:hunter2-pw@cache:6379/x" })).toThrow(/database "x"/);
    expect(redisWhere({ redisUrl: "redis://svc:hunter2-pw@cache:6379" })).toBe("redis://svc:***@cache:6379");
  });

  it("URLs are shown without their password, and a lone user part (a token) is hidden too", () => {
    expect(redactUrl("http://127.0.0.1:18081/apis/ccompat/v7")).toBe("http://127.0.0.1:18081/apis/ccompat/v7");
    expect(redactUrl("https://key:s3cr3t@registry.example.com/apis/ccompat/v7")).toBe("https://key:***@registry.example.com/apis/ccompat/v7");
    expect(redactUrl("https://tok3n@registry.example.com")).toBe("https://***@registry.example.com");
    expect(redactUrl("redis://:pw@127.0.0.1:6379")).toBe("redis://:***@127.0.0.1:6379");
    expect(redactUrl("user:pw@host:1")).not.toContain("pw@");
    expect(redactSecrets("a pw and pw again", ["pw", ""])).toBe("a *** and *** again");
  });

  it("MinIO credentials come from OZ0_MINIO_ACCESS_KEY and OZ0_MINIO_SECRET_KEY, else the local stack's development ones", () => {
    const given = endpointsFromEnv({ OZ0_MINIO_URL: "https://s3.example.com", OZ0_MINIO_ACCESS_KEY: "AK", OZ0_MINIO_SECRET_KEY: "SK-given" });
    expect(given).toMatchObject({ minioUrl: "https://s3.example.com", minioAccessKey: "AK", minioSecretKey: "SK-given" });
    expect(endpointsFromEnv({}).minioSecretKey).not.toBe("SK-given");
    expect(endpointsFromEnv({}).redisPassword).toBeUndefined();
  });

  it("Kafka TLS and SASL come from the environment; a missing password is named, never quoted", () => {
    const e = endpointsFromEnv({});
    const plain = kafkaConfig("t", e, {}, quiet);
    expect(plain.ssl).toBeUndefined();
    expect(plain.sasl).toBeUndefined();
    const sasl = kafkaConfig("t", e, { OZ0_KAFKA_SSL: "1", OZ0_KAFKA_SASL_MECHANISM: "scram-sha-512", OZ0_KAFKA_USERNAME: "svc", OZ0_KAFKA_PASSWORD: "kafka-pw-1" }, quiet);
    expect(sasl.ssl).toBe(true);
    expect(sasl.sasl).toEqual({ mechanism: "scram-sha-512", username: "svc", password: "kafka-pw-1" });
    expect(() => kafkaConfig("t", e, { OZ0_KAFKA_SASL_MECHANISM: "plain", OZ0_KAFKA_USERNAME: "svc" }, quiet)).toThrow(/the password is not set/);
    expect(() => kafkaConfig("t", e, { OZ0_KAFKA_SASL_MECHANISM: "gssapi", OZ0_KAFKA_USERNAME: "svc", OZ0_KAFKA_PASSWORD: "kafka-pw-2" }, quiet)).toThrow(/not supported/);
    expect(() => kafkaConfig("t", e, { OZ0_KAFKA_SASL_MECHANISM: "gssapi", OZ0_KAFKA_USERNAME: "svc", OZ0_KAFKA_PASSWORD: "kafka-pw-2" }, quiet)).not.toThrow(/kafka-pw-2/);
  });
});
