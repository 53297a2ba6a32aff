import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { fromConfig } from "../../processors/audit-sink/derive.ts";
import { CONFIG_TOPIC } from "../../processors/runner/config-table.ts";
import { TraceStore } from "../../store/trace-store.ts";
import { partsByJob } from "../../store/trace-parts.ts";
import type { AuditEvent, ConfigRecord } from "../../schemas/types.ts";
import { FileNotFound } from "../../store/file-errors.ts";
import { FileStore } from "../../store/files.ts";
import { minioClient } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { redisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { jobEvent, uid } from "../support/events.ts";
import { oz0 } from "../support/oz0.ts";
import { collect, endpoints, serde } from "../support/kafka.ts";


describe("oz0 tenant and oz0 quota set: a tenant's settings changed from the command line, validated and audited", () => {
  it("OFF-13 LIM-4 LIM-10 offload, spend and quotas (one for a month only) are published to the configuration table with the reason and who changed them; tool-policy shows the result", async () => {
    const tenant = uid("tenant").replace(/-/g, "_");
    const offload = await oz0(["tenant", "offload", tenant, "--default", "6000", "--ceiling", "20000", "--reason", "long pages fill the context", "--as", "alice", "--json"]);
    expect(offload.code, offload.err).toBe(0);
    const said = JSON.parse(offload.out) as { tenant: string; by: string; changes: Array<{ field: string; to: unknown }> };
    expect([said.tenant, said.by]).toEqual([tenant, "alice"]);
    expect(said.changes.map((c) => [c.field, c.to])).toEqual(expect.arrayContaining([["offload.default", 6000], ["offload.ceiling", 20000]]));
    const spend = await oz0(["tenant", "spend", tenant, "--tree-fan-out", "5", "--no-progress", "4", "--reason", "a runaway tree", "--as", "bob"]);
    expect(spend.code, spend.err).toBe(0);
    expect(spend.out).toContain("limits.tree.fan_out");
    const quota = await oz0(["quota", "set", "person", "alice", "200", "--tenant", tenant, "--reason", "leads the migration", "--as", "bob"]);
    expect(quota.code, quota.err).toBe(0);
    const month = await oz0(["quota", "set", "team", "research", "5000", "--month", "2026-12", "--tenant", tenant, "--reason", "year-end evaluation", "--as", "bob"]);
    expect(month.code, month.err).toBe(0);
    const badMonth = await oz0(["quota", "set", "team", "research", "5000", "--month", "December", "--tenant", tenant, "--reason", "x"]);
    expect([badMonth.code, badMonth.err]).toEqual([2, expect.stringMatching(/--month December: give the month as YYYY-MM/)]);

    const policy = await oz0(["tenant", "tool-policy", tenant, "--json"]);
    expect(policy.code, policy.err).toBe(0);
    expect(JSON.parse(policy.out)).toMatchObject({ id: tenant, offload: { default: 6000, ceiling: 20000 }, limits: { tree: { fan_out: 5 } }, loops: { no_progress: 4 }, quotas: { per_person: { alice: 200 }, per_month: { "2026-12": { per_team: { research: 5000 } } } } });

    // The rows on oz0.config, as the audit sink reads them: each a tenant.changed entry with its reason and who.
    const s = await serde();
    const rows = await collect<ConfigRecord>(CONFIG_TOPIC, "ConfigRecord", s, (r) => r.kind === "tenant" && r.id === tenant, 4, 60_000);
    const audited = rows.map((r, i) => fromConfig(r, { topic: CONFIG_TOPIC, partition: 0, offset: String(i), key: `tenant/${tenant}`, timestamp: String(r.ts) }));
    expect(audited.map((a) => (a && "kind" in a ? [a.kind, a.reason, a.facts.source] : a))).toEqual([
      ["tenant.changed", "long pages fill the context", "tenant offload (person:alice)"],
      ["tenant.changed", "a runaway tree", "tenant spend (person:bob)"],
      ["tenant.changed", "leads the migration", "quota set (person:bob)"],
      ["tenant.changed", "year-end evaluation", "quota set (person:bob)"],
    ]);
  });

  it("FIT-17 the project's other commands answer under oz0 with their own arguments: config validate, plugin lint, loops report, audit --help", async () => {
    const validate = await oz0(["config", "validate", "config/examples"]);
    expect(validate.code, validate.err).toBe(0);
    expect(validate.out).toMatch(/agent\(s\), 1 plugin\(s\), 1 tenant\(s\): 0 error\(s\)/);
    const report = await oz0(["loops", "report", "--json"]);
    expect(report.code, report.err).toBe(0);
    expect(JSON.parse(report.out)).toMatchObject({ days: 7, min_tenants: 3 });
    const lint = await oz0(["plugin", "lint", "config/examples/plugins/acme_docs.yaml"]);
    expect([lint.code, lint.out]).toEqual([0, expect.stringMatching(/1 manifest\(s\): 0 error\(s\)/)]);
    const bad = join(mkdtempSync(join(tmpdir(), "oz0-lint-")), "oz0-plugin.yaml");
    writeFileSync(bad, "name: bad\ntools:\n  - nme: x\n");
    const badLint = await oz0(["plugin", "lint", bad]);
    expect(badLint.code).toBe(1);
    expect(badLint.out + badLint.err).toMatch(/oz0-plugin\.yaml:3: tools\[0\]\.nme: unknown key "nme"/);
    const badJson = await oz0(["plugin", "lint", bad, "--json"]);
    expect(badJson.code).toBe(1);
    const said = JSON.parse(badJson.out) as { manifests: number; errors: number; issues: Array<{ severity: string; path: string; line: number | null; field: string; reason: string }> };
    expect([said.manifests, said.errors]).toEqual([1, 3]);
    expect(said.issues.find((i) => i.field === "tools[0].nme")).toMatchObject({ severity: "error", path: bad, line: 3 });
    const help = await oz0(["audit", "--help"]);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/^oz0 audit /);
    const unknown = await oz0(["nothing", "here"]);
    expect(unknown.code).toBe(2);
  });

  it("OFF-10 FILE-6 tenant erase removes the tenant's files and traces, keeps another tenant's, refuses without --yes, and is audited with who and why", async () => {
    const [bucket, traceBucket] = ["oz0-erase-files-test", "oz0-erase-traces-test"];
    const client = minioClient(endpoints());
    const files = new FileStore({ client, bucket, keys: PayloadKeys.fromEnv() });
    await files.ensureBucket();
    const redis = redisClient(endpoints());
    onTestFinished(() => redis.disconnect());
    const traces = new TraceStore({ client, bucket: traceBucket, retentionDays: 1, index: { redis, keys: new Keys() } });
    await traces.ensureBucket();
    const [gone, kept] = [uid("tenant"), uid("tenant")];
    const tree = uid("tree");
    const mine = await files.store({ tenant: gone, tree }, Buffer.from(`data of ${gone}`));
    const theirs = await files.store({ tenant: kept, tree }, Buffer.from(`data of ${kept}`));
    await traces.write({ topic: "oz0.jobs", partition: 0, first: "0", last: "1" }, partsByJob([{ job: jobEvent(tree, "started", { tenant: gone }) }, { job: jobEvent(tree, "started", { tenant: kept }) }]));
    const env = { OZ0_BUCKET: bucket, OZ0_TRACE_BUCKET: traceBucket };

    const unsure = await oz0(["tenant", "erase", gone, "--reason", "contract ended"], env);
    expect([unsure.code, unsure.err]).toEqual([2, expect.stringMatching(/give --yes/)]);
    await expect(files.read({ tenant: gone, tree }, mine.ref)).resolves.toBeDefined();

    const erased = await oz0(["tenant", "erase", gone, "--reason", "contract ended", "--yes", "--as", "dana", "--json"], env);
    expect(erased.code, erased.err).toBe(0);
    expect(JSON.parse(erased.out)).toMatchObject({ tenant: gone, by: "dana", files: { erased: 1, held: [] }, traces: { erased: 1 } });
    await expect(files.read({ tenant: gone, tree }, mine.ref)).rejects.toThrow(FileNotFound);
    expect((await files.read({ tenant: kept, tree }, theirs.ref)).bytes.toString()).toBe(`data of ${kept}`);
    expect((await traces.read(tree)).jobs?.map((j) => j.tenant)).toEqual([kept]);

    const s = await serde();
    const [entry] = await collect<AuditEvent>("oz0.audit", "AuditEvent", s, (e) => e.kind === "tenant.erased" && e.tenant === gone, 1, 60_000);
    expect(entry).toMatchObject({ actor: "dana", reason: "contract ended", numbers: { files_erased: 1, files_held: 0, trace_parts_erased: 1 } });
  });

  it("OFF-13 a change without a reason, or one a tenant file could not hold, is refused and publishes nothing", async () => {
    const tenant = uid("tenant").replace(/-/g, "_");
    const noReason = await oz0(["tenant", "offload", tenant, "--default", "6000"]);
    expect(noReason.code).toBe(2);
    expect(noReason.err).toMatch(/give --reason/);
    const tooHigh = await oz0(["tenant", "offload", tenant, "--default", "30000", "--ceiling", "20000", "--reason", "x"]);
    expect(tooHigh.code).toBe(1);
    expect(tooHigh.err).toContain("offload.default: 30000 is above the ceiling (20000)");
    const none = await oz0(["tenant", "tool-policy", tenant]);
    expect(none.code).toBe(1);
    expect(none.err).toMatch(/has no settings in the configuration table/);
  });
});
