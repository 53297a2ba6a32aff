// No Docker engine runs here, so docker-compose.yml and the Dockerfile are checked by
// structure: what `docker compose config` and a first `up` would trip on.
import { describe, it, expect } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

type Service = {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[]; disable?: boolean };
  profiles?: string[];
  ports?: Array<string | { published?: string | number; host_ip?: string }>;
};

type Compose = { services: Record<string, Service> };

function loadCompose(): Compose {
  // Compose resolves `<<:` merge keys, as YAML 1.1 does.
  const doc: unknown = parse(readFileSync(join(root, "docker-compose.yml"), "utf8"), { merge: true });
  if (typeof doc !== "object" || doc === null || !("services" in doc)) {
    throw new Error("docker-compose.yml has no services");
  }
  return doc as Compose;
}

function envNames(service: Service): string[] {
  const env = service.environment ?? {};
  const names = Array.isArray(env) ? env.map((entry) => entry.split("=")[0] ?? "") : Object.keys(env);
  return names.sort();
}

function envValue(service: Service, name: string): string | undefined {
  const env = service.environment ?? {};
  if (Array.isArray(env)) {
    const entry = env.find((e) => e.split("=")[0] === name);
    return entry === undefined ? undefined : entry.slice(name.length + 1);
  }
  const value = env[name];
  return value === undefined || value === null ? undefined : String(value);
}

function dependsOn(service: Service): Array<[string, string | undefined]> {
  const deps = service.depends_on ?? [];
  if (Array.isArray(deps)) return deps.map((name) => [name, undefined]);
  return Object.entries(deps).map(([name, spec]) => [name, spec?.condition]);
}

function words(command: string | string[] | undefined): string {
  return Array.isArray(command) ? command.join(" ") : (command ?? "");
}

const compose = loadCompose();
const services = compose.services;
const names = Object.keys(services);
const PIPELINE_ENV = [
  "OZ0_KAFKA_BROKERS",
  "OZ0_MINIO_ACCESS_KEY",
  "OZ0_MINIO_SECRET_KEY",
  "OZ0_MINIO_URL",
  "OZ0_REDIS_URL",
  "OZ0_REGISTRY_URL",
  "OZ0_STACK",
];

describe("STACK docker-compose.yml", () => {
  it("STACK has the four services, the pipeline and the load generator, the Redis Cluster profile's nodes, its init and its pipeline, and the Kafka cluster profile's nodes and its pipeline", () => {
    expect([...names].sort()).toEqual([
      "kafka",
      "kafka-cluster-1",
      "kafka-cluster-2",
      "kafka-cluster-3",
      "load",
      "minio",
      "pipeline",
      "pipeline-cluster",
      "pipeline-kafka-cluster",
      "redis",
      "redis-cluster-1",
      "redis-cluster-2",
      "redis-cluster-3",
      "redis-cluster-init",
      "registry",
    ]);
  });

  it("STACK every service has an image or a build", () => {
    for (const [name, s] of Object.entries(services)) {
      expect(Boolean(s.image) || Boolean(s.build), name).toBe(true);
    }
  });

  it("STACK images are pinned to a tag, never latest", () => {
    for (const [name, s] of Object.entries(services)) {
      if (s.build) continue;
      expect(s.image, name).toMatch(/^[a-z0-9./_-]+:[A-Za-z0-9._-]+$/);
      expect(s.image, name).not.toMatch(/:latest$/);
    }
    expect(services.registry?.image).toBe("apicurio/apicurio-registry:3.3.3");
    const kafkaTag = services.kafka?.image?.split(":")[1] ?? "";
    expect(Number(kafkaTag.split(".")[0])).toBeGreaterThanOrEqual(4);
  });

  it("STACK every service but the pipeline's has a health check", () => {
    for (const [name, s] of Object.entries(services)) {
      if (name === "pipeline" || name === "load") continue;
      expect(s.healthcheck?.test, name).toBeTruthy();
      expect(s.healthcheck?.disable, name).not.toBe(true);
    }
  });

  it("STACK depends_on targets exist and wait for service_healthy (the load generator waits for the pipeline to start)", () => {
    let edges = 0;
    for (const [name, s] of Object.entries(services)) {
      for (const [target, condition] of dependsOn(s)) {
        edges++;
        expect(names, `${name} depends on ${target}`).toContain(target);
        if (name === "load" && target === "pipeline") {
          expect(condition).toBe("service_started");
          continue;
        }
        if (target === "redis-cluster-init") {
          expect(condition, `${name} -> ${target}`).toBe("service_completed_successfully");
          continue;
        }
        expect(condition, `${name} -> ${target}`).toBe("service_healthy");
        expect(services[target]?.healthcheck?.test, `${target} needs a health check`).toBeTruthy();
      }
    }
    expect(edges).toBeGreaterThan(0);
    expect(dependsOn(services.registry ?? {}).map(([t]) => t)).toContain("kafka");
    expect(dependsOn(services.pipeline ?? {}).map(([t]) => t).sort()).toEqual(["kafka", "minio", "redis", "registry"]);
    expect(dependsOn(services.load ?? {}).map(([t]) => t).sort()).toEqual(["kafka", "minio", "pipeline", "redis", "registry"]);
  });

  it("STACK the load service runs only under the `load` profile, from the pipeline's image", () => {
    const load = services.load;
    expect(load?.profiles).toEqual(["load"]);
    expect(words(load?.command)).toBe("npm run load -- --external");
    const scripts = (JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> }).scripts;
    expect(scripts.load).toBeTruthy();
    expect(load?.image).toBe(services.pipeline?.image);
    expect(services.pipeline?.profiles).toBeUndefined();
  });

  it("STACK the redis-cluster profile runs three cluster-mode masters with AOF, joins them once, and a pipeline on their seed URLs", () => {
    const nodes = ["redis-cluster-1", "redis-cluster-2", "redis-cluster-3"];
    for (const name of [...nodes, "redis-cluster-init", "pipeline-cluster"]) expect(services[name]?.profiles, name).toEqual(["redis-cluster"]);
    for (const name of nodes) {
      const command = words(services[name]?.command);
      expect(command, name).toContain("--cluster-enabled yes");
      expect(command, name).toContain("--appendfsync always");
      expect(command, name).toBe(words(services.redis?.command).replace("redis-server", "redis-server --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 --cluster-allow-replica-migration no"));
    }
    expect(words(services["redis-cluster-init"]?.command)).toMatch(/redis-cli --cluster create .* --cluster-replicas 0 --cluster-yes/);
    const cluster = services["pipeline-cluster"] ?? {};
    expect(envNames(cluster)).toEqual(PIPELINE_ENV);
    expect(envValue(cluster, "OZ0_REDIS_URL")).toBe(nodes.map((n) => `redis://${n}:6379`).join(","));
    expect(cluster.image).toBe(services.pipeline?.image);
    expect(words(cluster.command)).toBe("npm start");
    expect(dependsOn(cluster).map(([t]) => t).sort()).toEqual(["kafka", "minio", "redis-cluster-init", "registry"]);
  });

  it("STACK the kafka-cluster profile runs three KRaft nodes, each a broker and a controller of one quorum, replicating three times with two in sync, and a pipeline on their brokers", () => {
    const nodes = ["kafka-cluster-1", "kafka-cluster-2", "kafka-cluster-3"];
    for (const name of [...nodes, "pipeline-kafka-cluster"]) expect(services[name]?.profiles, name).toEqual(["kafka-cluster"]);
    const single = services.kafka ?? {};
    nodes.forEach((name, i) => {
      const node = services[name] ?? {};
      expect(node.image, name).toBe(single.image);
      expect(envValue(node, "KAFKA_NODE_ID"), name).toBe(String(i + 1));
      expect(envValue(node, "KAFKA_PROCESS_ROLES"), name).toBe("broker,controller");
      expect(envValue(node, "KAFKA_CONTROLLER_QUORUM_VOTERS"), name).toBe(nodes.map((n, j) => `${j + 1}@${n}:9093`).join(","));
      expect(envValue(node, "KAFKA_ADVERTISED_LISTENERS"), name).toBe(`PLAINTEXT://${name}:9092`);
      expect(envValue(node, "CLUSTER_ID"), name).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(envValue(node, "CLUSTER_ID"), name).toBe(envValue(services[nodes[0] ?? ""] ?? {}, "CLUSTER_ID"));
      const settings = {
        KAFKA_DEFAULT_REPLICATION_FACTOR: "3",
        KAFKA_MIN_INSYNC_REPLICAS: "2",
        KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: "3",
        KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: "3",
        KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: "2",
      };
      for (const [k, v] of Object.entries(settings)) expect(envValue(node, k), `${name} ${k}`).toBe(v);
      expect(node.healthcheck?.test, name).toEqual(single.healthcheck?.test);
    });
    const pipeline = services["pipeline-kafka-cluster"] ?? {};
    expect(envNames(pipeline)).toEqual(PIPELINE_ENV);
    expect(envValue(pipeline, "OZ0_KAFKA_BROKERS")).toBe(nodes.map((n) => `${n}:9092`).join(","));
    expect(envValue(pipeline, "OZ0_REGISTRY_URL")).toBe("http://registry:8080/apis/ccompat/v7");
    expect(pipeline.image).toBe(services.pipeline?.image);
    expect(words(pipeline.command)).toBe("npm start");
    expect(dependsOn(pipeline).map(([t]) => t).sort()).toEqual([...nodes, "minio", "redis", "registry"].sort());
  });

  it("STACK the model gateway npm start serves is published on the host's loopback only, its providers' keys from the host's environment", () => {
    const pipeline = services.pipeline ?? {};
    expect(envValue(pipeline, "OZ0_GATEWAY_LISTEN")).toBe("0.0.0.0:8940");
    expect((pipeline as { ports?: unknown }).ports).toEqual(["127.0.0.1:8940:8940"]);
    expect(envValue(pipeline, "OZ0_OPENAI_API_KEY")).toBe("${OZ0_OPENAI_API_KEY:-}");
    expect(envValue(pipeline, "OZ0_ANTHROPIC_API_KEY")).toBe("${OZ0_ANTHROPIC_API_KEY:-}");
  });

  it("STACK the pipeline is built from the Dockerfile and runs npm start", () => {
    expect(services.pipeline?.build).toBeTruthy();
    const command = words(services.pipeline?.command);
    if (command) expect(command).toBe("npm start");
  });

  it("STACK the pipeline's environment is exactly the OZ0_* endpoints (and the pipeline's, the model gateway's), pointing inside the network", () => {
    const gateway = ["OZ0_ANTHROPIC_API_KEY", "OZ0_GATEWAY_LISTEN", "OZ0_OPENAI_API_KEY"];
    for (const app of ["pipeline", "load"]) {
      const s = services[app] ?? {};
      expect(envNames(s), app).toEqual(app === "pipeline" ? [...PIPELINE_ENV, ...gateway].sort() : PIPELINE_ENV);
      expect(envValue(s, "OZ0_KAFKA_BROKERS")).toBe("kafka:9092");
      expect(envValue(s, "OZ0_REGISTRY_URL")).toBe("http://registry:8080/apis/ccompat/v7");
      expect(envValue(s, "OZ0_REDIS_URL")).toBe("redis://redis:6379");
      expect(envValue(s, "OZ0_MINIO_URL")).toBe("http://minio:9000");
      expect(envValue(s, "OZ0_STACK")).toBe("external");
    }
  });

  it("STACK MinIO's root credentials are the pipeline's MinIO credentials", () => {
    const minio = services.minio ?? {};
    const pipeline = services.pipeline ?? {};
    expect(envValue(minio, "MINIO_ROOT_USER")).toBe(envValue(pipeline, "OZ0_MINIO_ACCESS_KEY"));
    expect(envValue(minio, "MINIO_ROOT_PASSWORD")).toBe(envValue(pipeline, "OZ0_MINIO_SECRET_KEY"));
    expect(words(minio.command)).toContain("server /data");
    expect(words(minio.command)).toContain("--console-address :9001");
  });

  it("STACK the registry keeps its schemas in the compose Kafka", () => {
    const registry = services.registry ?? {};
    expect(envValue(registry, "APICURIO_STORAGE_KIND")).toBe("kafkasql");
    expect(envValue(registry, "APICURIO_KAFKASQL_BOOTSTRAP_SERVERS")).toBe("kafka:9092");
  });

  it("STACK Kafka is a KRaft single node with listeners inside and outside the network", () => {
    const kafka = services.kafka ?? {};
    expect(envValue(kafka, "KAFKA_PROCESS_ROLES")).toBe("broker,controller");
    expect(envValue(kafka, "KAFKA_CONTROLLER_QUORUM_VOTERS")).toMatch(/^1@kafka:\d+$/);
    const advertised = envValue(kafka, "KAFKA_ADVERTISED_LISTENERS") ?? "";
    expect(advertised).toContain("://kafka:9092");
    expect(advertised).toMatch(/:\/\/(127\.0\.0\.1|localhost):\$\{OZ0_KAFKA_PORT:-19092\}/);
    for (const rf of ["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"]) {
      expect(envValue(kafka, rf), rf).toBe("1");
    }
  });

  it("STACK host ports are published on loopback with the local stack's defaults", () => {
    const published = (name: string): string[] =>
      (services[name]?.ports ?? []).map((p) => (typeof p === "string" ? p : `${p.host_ip ?? ""}:${p.published ?? ""}`));
    const expected: Record<string, string[]> = {
      kafka: ["OZ0_KAFKA_PORT:-19092"],
      registry: ["OZ0_REGISTRY_PORT:-18081", "OZ0_REGISTRY_MGMT_PORT:-18091"],
      redis: ["OZ0_REDIS_PORT:-16379"],
      minio: ["OZ0_MINIO_PORT:-19000", "OZ0_MINIO_CONSOLE_PORT:-19001"],
    };
    for (const [name, ports] of Object.entries(expected)) {
      const got = published(name);
      for (const p of ports) expect(got.some((g) => g.startsWith(`127.0.0.1:\${${p}}`)), `${name} ${p}`).toBe(true);
    }
  });
});

describe("STACK Dockerfile", () => {
  const path = join(root, "Dockerfile");

  it("STACK exists, is node:24-slim based, and installs with npm ci once the kafkajs patch is in place", () => {
    expect(existsSync(path)).toBe(true);
    const text = readFileSync(path, "utf8");
    expect(text).toMatch(/^FROM node:24-slim\b/m);
    expect(text).toMatch(/^RUN npm ci\b/m);
    expect(text.indexOf("COPY --chown=node:node patches/ patches/")).toBeGreaterThan(-1);
    expect(text.indexOf("COPY --chown=node:node patches/ patches/")).toBeLessThan(text.search(/^RUN npm ci\b/m));
  });

  it("STACK its CMD or ENTRYPOINT runs npm start", () => {
    const text = readFileSync(path, "utf8");
    const lines = text.split("\n").filter((l) => /^(CMD|ENTRYPOINT)\s/.test(l));
    expect(lines.length).toBeGreaterThan(0);
    const last = lines.map((l) => {
      const arg = l.replace(/^(CMD|ENTRYPOINT)\s+/, "").trim();
      return arg.startsWith("[") ? (JSON.parse(arg) as string[]).join(" ") : arg;
    });
    expect(last.join(" ")).toMatch(/\bnpm start\b/);
  });

  it("STACK the build context leaves node_modules and .git out", () => {
    const ignore = readFileSync(join(root, ".dockerignore"), "utf8").split("\n").map((l) => l.trim());
    expect(ignore).toContain("node_modules");
    expect(ignore).toContain(".git");
  });
});
