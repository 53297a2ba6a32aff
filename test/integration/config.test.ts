import { execFile } from "node:child_process";
import { mkdtemp, mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { CONFIG_TOPIC, ConfigTable } from "../../processors/runner/config-table.ts";
import { endpointsEnv, EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { endpoints, kafka, serde } from "../support/kafka.ts";
import { uid } from "../support/events.ts";

const run = promisify(execFile);
const quiet = createLogger({}, () => {});

function cli(args: string[]) {
  const e = endpoints();
  const env = {
    ...process.env,
    ...endpointsEnv(e),
    OZ0_LOG_LEVEL: "error",
  };
  return run("npx", ["tsx", "bin/config.ts", ...args], { env, timeout: 120_000 }).then(
    (r) => ({ code: 0, out: r.stdout }),
    (err: { code?: number; stdout?: string }) => ({ code: err.code ?? 1, out: err.stdout ?? "" }),
  );
}

async function tenantDir(tenant: string, offloadDefault: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "oz0-config-"));
  await mkdir(join(dir, "tenants"));
  await writeFile(join(dir, "tenants", `${tenant}.yaml`), `id: ${tenant}\noffload: {default: ${offloadDefault}, ceiling: 20000}\n`);
  return dir;
}

describe("configuration through the compacted config topic", () => {
  it("OFF-13 publishes tenant settings only with a reason, and every processor's table sees them", async () => {
    const tenant = uid("tenant");
    const dir = await tenantDir(tenant, 6000);
    const refused = await cli(["publish", dir]);
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(/needs a reason/);

    const published = await cli(["publish", dir, "--reason", "long pages fill the context"]);
    expect(published.out).toMatch(new RegExp(`published\\s+tenant/${tenant}`));
    expect(published.code).toBe(0);
    const again = await cli(["publish", dir]);
    expect(again.out).toMatch(/nothing to publish/);
    expect(again.code).toBe(0);

    const s = await serde();
    const table = await ConfigTable.start(kafka(), s, quiet);
    try {
      expect(table.get("tenant", tenant)).toMatchObject({ id: tenant, offload: { default: 6000, ceiling: 20000 } });
    } finally {
      await table.stop();
    }
  });

  it("a tombstone removes a row from the table", async () => {
    const tenant = uid("gone");
    const s = await serde();
    const producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    const value = s.encode("ConfigRecord", { kind: "tenant", id: tenant, value: JSON.stringify({ id: tenant }), source: "test", reason: "test", ts: Date.now() });
    await producer.send({ topic: CONFIG_TOPIC, messages: [{ key: `tenant/${tenant}`, value }] });
    const before = await ConfigTable.start(kafka(), s, quiet);
    expect(before.get("tenant", tenant)).toEqual({ id: tenant });
    await before.stop();
    await producer.send({ topic: CONFIG_TOPIC, messages: [{ key: `tenant/${tenant}`, value: null }] });
    await producer.disconnect();
    const after = await ConfigTable.start(kafka(), s, quiet);
    expect(after.get("tenant", tenant)).toBeUndefined();
    await after.stop();
  });

  it("refuses an invalid file with its path, field and reason, and publishes nothing", async () => {
    const dir = await mkdtemp(join(tmpdir(), "oz0-config-"));
    await mkdir(join(dir, "agents"));
    await writeFile(join(dir, "agents", "broken.yaml"), "limits:\n  timeout: 1h90x\n  max_stepz: 3\n");
    const res = await cli(["publish", dir]);
    expect(res.code).toBe(1);
    expect(res.out).toMatch(/broken\.yaml:2: limits\.timeout: /);
    expect(res.out).toMatch(/max_stepz/);
    expect(res.out).toMatch(/not published/);
  });
});
