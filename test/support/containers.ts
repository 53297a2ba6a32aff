/**
 * The same four services as the local stack, in containers, for machines with a Docker
 * engine. Images match docker-compose.yml.
 */
import { createServer } from "node:net";
import { GenericContainer, Network, Wait, type StartedTestContainer } from "testcontainers";
import type { Endpoints } from "../../processors/runner/endpoints.ts";
import { waitForServices } from "./health.ts";
import type { Services } from "./services.ts";

const MINIO_USER = "oz0admin";
const MINIO_PASSWORD = "oz0-test-secret";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === "object" ? resolve(addr.port) : reject(new Error("no free port"))));
    });
  });
}

export async function startContainers(): Promise<Services> {
  const network = await new Network().start();
  const started: StartedTestContainer[] = [];
  try {
    const kafkaPort = await freePort();
    const kafka = await new GenericContainer("apache/kafka:4.4.0")
      .withNetwork(network)
      .withNetworkAliases("kafka")
      .withExposedPorts({ container: 9094, host: kafkaPort })
      .withEnvironment({
        KAFKA_NODE_ID: "1",
        KAFKA_PROCESS_ROLES: "broker,controller",
        KAFKA_CONTROLLER_QUORUM_VOTERS: "1@kafka:9093",
        KAFKA_LISTENERS: "PLAINTEXT://:9092,CONTROLLER://:9093,EXTERNAL://:9094",
        KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://kafka:9092,EXTERNAL://127.0.0.1:${kafkaPort}`,
        KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
        KAFKA_CONTROLLER_LISTENER_NAMES: "CONTROLLER",
        KAFKA_INTER_BROKER_LISTENER_NAME: "PLAINTEXT",
        KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: "1",
        KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: "1",
        KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: "1",
        KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR: "1",
        KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR: "1",
        KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: "0",
      })
      .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
      .start();
    started.push(kafka);
    const registry = await new GenericContainer("apicurio/apicurio-registry:3.3.3")
      .withNetwork(network)
      .withExposedPorts(8080)
      .withEnvironment({
        APICURIO_STORAGE_KIND: "kafkasql",
        APICURIO_KAFKASQL_BOOTSTRAP_SERVERS: "kafka:9092",
        QUARKUS_HTTP_ACCESS_LOG_ENABLED: "false",
      })
      .withWaitStrategy(Wait.forHttp("/apis/ccompat/v7/subjects", 8080).forStatusCode(200))
      .withStartupTimeout(180_000)
      .start();
    started.push(registry);
    const redis = await new GenericContainer("redis:7").withExposedPorts(6379).withCommand(["redis-server", "--appendonly", "yes"]).start();
    started.push(redis);
    const minio = await new GenericContainer("minio/minio:RELEASE.2025-09-07T16-13-09Z")
      .withExposedPorts(9000)
      .withEnvironment({ MINIO_ROOT_USER: MINIO_USER, MINIO_ROOT_PASSWORD: MINIO_PASSWORD })
      .withCommand(["server", "/data"])
      .withWaitStrategy(Wait.forHttp("/minio/health/ready", 9000).forStatusCode(200))
      .start();
    started.push(minio);
    const endpoints: Endpoints = {
      kafkaBrokers: [`127.0.0.1:${kafkaPort}`],
      registryUrl: `http://${registry.getHost()}:${registry.getMappedPort(8080)}/apis/ccompat/v7`,
      redisUrl: `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`,
      minioUrl: `http://${minio.getHost()}:${minio.getMappedPort(9000)}`,
      minioAccessKey: MINIO_USER,
      minioSecretKey: MINIO_PASSWORD,
    };
    await fetch(`${endpoints.registryUrl}/config`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ compatibility: "BACKWARD" }),
    });
    await waitForServices(endpoints, 60_000);
    const stop = async (): Promise<void> => {
      for (const c of started.reverse()) await c.stop();
      await network.stop();
    };
    return { endpoints, mode: "containers", redisCluster: false, stop };
  } catch (err) {
    for (const c of started.reverse()) await c.stop().catch(() => undefined);
    await network.stop().catch(() => undefined);
    throw new Error(`starting the services in containers failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}
