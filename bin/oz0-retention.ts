/**
 * `oz0 retention status`: each tenant's last retention sweep (when, by which instance, what it
 * removed and held back) as the pipeline recorded it in Redis, and what is past its retention
 * now, from a dry run of the same sweep that removes nothing (FILE-6, OFF-10; docs/files.md
 * "Retention").
 */
import { daysToMs, traceRetentionDaysFromEnv } from "../processors/retention/schedule.ts";
import { redisRetentionStore } from "../processors/retention/redis-store.ts";
import { formatStatus, type RetentionStatus, type TenantStatus } from "../processors/retention/status.ts";
import { dueOf, retentionTenants, type RetentionDeps } from "../processors/retention/sweep.ts";
import { sinkStores } from "../processors/sinks.ts";
import { FileStore, RETENTION_MS } from "../store/files.ts";
import { minioClient } from "../store/objects.ts";
import { PayloadKeys } from "../store/payload-keys.ts";
import { redisClient } from "../store/redis/client.ts";
import { Keys } from "../store/redis/keys.ts";
import { TreeHolds } from "../store/tree-holds.ts";
import { parse, usage } from "./cli.ts";
import { servicesForCommand } from "../topology/services.ts";

export const RETENTION_HELP = `oz0 retention status [--tenant T] [--json]

Retention as it runs (FILE-6, OFF-10): files are kept 90 days after a tree last stored them,
trace parts OZ0_TRACE_RETENTION_DAYS (default 30) after they were written; the pipeline sweeps
them on a schedule (OZ0_RETENTION_EVERY, default 1h). For each tenant with files or traces,
or one tenant: its last sweep (when, by which instance, how long, what it removed and held
back, its errors) and what is past its retention now (a dry run of the sweep: it removes
nothing), per kind. What a legal hold or a held tree keeps is counted as held back.

  --tenant T   only this tenant
  --json       one JSON object, for scripts

Example:
  oz0 retention status --tenant acme
`;

export async function retentionStatus(args: string[]): Promise<string> {
  const { values, positionals } = parse(RETENTION_HELP, args, {
    tenant: { type: "string" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  });
  if (values.help) return RETENTION_HELP;
  if (positionals.length > 0) throw usage(`retention status takes no arguments, got ${positionals.join(" ")}\n\n${RETENTION_HELP}`);
  if (values.tenant !== undefined && values.tenant.trim() === "") throw usage("--tenant: give a tenant ID\n");
  const traceDays = traceRetentionDaysFromEnv(process.env);
  const endpoints = await servicesForCommand();
  const client = minioClient(endpoints);
  const files = new FileStore({ client, bucket: process.env.OZ0_BUCKET ?? "oz0-files", keys: PayloadKeys.fromEnv() });
  const redis = redisClient(endpoints, { maxRetriesPerRequest: 3 });
  try {
    const keys = new Keys();
    const holds = new TreeHolds(redis, keys);
    const deps: RetentionDeps = {
      files: (await client.bucketExists(files.bucket)) ? files : null,
      traces: sinkStores(endpoints).traces.indexed(redis, keys),
      traceRetentionMs: daysToMs(traceDays),
      state: redisRetentionStore(redis, keys),
      heldTrees: (tenant) => holds.heldTrees(tenant),
    };
    const now = Date.now();
    const records = await deps.state.last(values.tenant);
    const tenants = values.tenant !== undefined ? [values.tenant] : [...new Set([...records.map((r) => r.tenant), ...(await retentionTenants(deps))])].sort();
    const out: TenantStatus[] = [];
    for (const tenant of tenants) {
      const last = records.find((r) => r.tenant === tenant) ?? null;
      try {
        out.push({ tenant, last, due: await dueOf(deps, tenant, now) });
      } catch (err) {
        out.push({ tenant, last, due: null, dueError: err instanceof Error ? err.message : String(err) });
      }
    }
    const status: RetentionStatus = { now, retention: { files_days: RETENTION_MS / 86_400_000, traces_days: traceDays }, tenants: out };
    return values.json ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status);
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}
