// stack/env.sh as the TypeScript code and CI read it: the Kafka cluster profile's brokers, and
// OZ0_STACK_KAFKA choosing which Kafka OZ0_KAFKA_BROKERS names. Runs the script, no service.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { LOCAL_STACK } from "../../stack/local.ts";

/** `bash stack/env.sh` with only these variables (and PATH): its status, KEY=value lines and errors. */
function envSh(env: Record<string, string>) {
  const r = spawnSync("bash", ["stack/env.sh"], { encoding: "utf8", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env } });
  const vars = Object.fromEntries(r.stdout.split("\n").filter(Boolean).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
  return { status: r.status, vars, stderr: r.stderr };
}

describe("STACK stack/env.sh and the Kafka cluster profile", () => {
  it("STACK names the three brokers of the Kafka cluster, as stack/local.ts does, and leaves OZ0_KAFKA_BROKERS on the single node by default", () => {
    const { status, vars } = envSh({});
    expect(status).toBe(0);
    expect(vars.OZ0_KAFKA_CLUSTER_BROKERS).toBe("127.0.0.1:19192,127.0.0.1:19193,127.0.0.1:19194");
    expect(vars.OZ0_KAFKA_CLUSTER_BROKERS).toBe(LOCAL_STACK.OZ0_KAFKA_CLUSTER_BROKERS);
    expect(vars.OZ0_KAFKA_BROKERS).toBe(LOCAL_STACK.OZ0_KAFKA_BROKERS);
    expect(envSh({ OZ0_STACK_KAFKA: "node" }).vars.OZ0_KAFKA_BROKERS).toBe("127.0.0.1:19092");
  });

  it("STACK OZ0_STACK_KAFKA=cluster points OZ0_KAFKA_BROKERS at the cluster, which follows OZ0_KAFKA_CLUSTER_PORT; the registry stays where it was", () => {
    const single = envSh({}).vars;
    const cluster = envSh({ OZ0_STACK_KAFKA: "cluster" }).vars;
    expect(cluster.OZ0_KAFKA_BROKERS).toBe(cluster.OZ0_KAFKA_CLUSTER_BROKERS);
    expect(cluster.OZ0_REGISTRY_URL).toBe(single.OZ0_REGISTRY_URL);
    expect(envSh({ OZ0_STACK_KAFKA: "cluster", OZ0_KAFKA_CLUSTER_PORT: "29100" }).vars.OZ0_KAFKA_BROKERS).toBe("127.0.0.1:29100,127.0.0.1:29101,127.0.0.1:29102");
  });

  it("STACK refuses an OZ0_STACK_KAFKA that is neither node nor cluster, saying which are", () => {
    const { status, stderr } = envSh({ OZ0_STACK_KAFKA: "three" });
    expect(status).toBe(2);
    expect(stderr).toMatch(/OZ0_STACK_KAFKA=three: use node .* or cluster/);
  });
});
