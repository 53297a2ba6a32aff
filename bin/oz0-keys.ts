/**
 * `oz0 keys create|list|revoke`: the project's own API keys (client/gateway/keys.ts), which bind
 * a request of the model gateway or of `oz0 mcp --listen --keys` to a tenant, an agent and a job
 * (tree, run). Kept hashed in Redis (client/gateway/redis-store.ts); the key is shown once, by create.
 * Making and revoking a key are audited on `oz0.audit` (`key.created`, `key.revoked`), naming
 * the key's ID, never the key.
 *
 * `create` starts no job: a job's start, its end and the revocation of its keys at its end are
 * `oz0 run`'s (or a runtime's), which wait for the pipeline to take the start and end the job
 * with its outcome; a job `keys create` started would have nobody to end it. Without --job,
 * create names the new job ID for a runtime to start.
 */
import { randomUUID } from "node:crypto";
import kafkajs from "kafkajs";
import type { KeyBinding } from "../client/gateway/keys.ts";
import { tryParseDuration, formatDuration } from "../config/units.ts";
import { kafkaConfig } from "../processors/runner/endpoints.ts";
import { deriveId } from "../processors/runner/ids.ts";
import { createLogger } from "../processors/runner/log.ts";
import { Serde } from "../schemas/serde.ts";
import type { AuditEvent } from "../schemas/types.ts";
import { redisKeyStore } from "../client/gateway/redis-store.ts";
import { isKeyId, type KeyStore } from "../client/gateway/store.ts";
import { redisClient } from "../store/redis/client.ts";
import { Keys } from "../store/redis/keys.ts";
import { Exit, parse, person, usage } from "./cli.ts";
import { servicesForCommand } from "../topology/services.ts";

export const KEYS_HELP: Record<string, string> = {
  "keys create": `oz0 keys create --tenant T --agent A [--job J] [--tree T] [--run R] [--expires 24h] [--as NAME] [--json]

Makes an API key of the project's, bound to tenant T, agent A and job J (its tree, default the
job's ID; its run, default <job>-run): a request that carries it (Authorization: Bearer or
x-api-key, to the model gateway or to oz0 mcp --listen --keys) is that job's, whatever the
request says. The key is printed once and kept nowhere: only its SHA-256 is stored. Its ID
(k-...) is what lists, the audit log and revoke name.

It starts no job. With --job, the key joins a job its runtime or oz0 run started; without it,
a new job ID is made and printed, for a runtime to start under that ID (the job's own limits,
its budget and timeout, hold from its start). oz0 run starts a job, makes its key, ends the
job when its command exits and revokes the key then: use it where one command is the agent.

  --tenant T      the tenant (required)
  --agent A       the agent definition the job runs under (required)
  --job J         the job (default: a new ID)
  --tree T        the job's tree (default: the job's ID)
  --run R         the run (default: <job>-run)
  --expires D     how long the key works, such as 90m, 24h or 7d (default 24h)
  --as NAME       who makes it (else OZ0_OPERATOR, else the login name); audited
  --json          one JSON object with the key, its ID and binding

Example:
  oz0 keys create --tenant acme --agent acme-reviewer --job job-7f3a --expires 2h
`,
  "keys list": `oz0 keys list [--tenant T] [--job J] [--json]

The API keys, newest first: ID, tenant, agent, job, when made, when it expires, and its state
(active, expired, revoked). Never the key. An expired key is listed for a week after.

  --tenant T   only this tenant's
  --job J      only this job's
  --json       one JSON array of bindings, for scripts

Example:
  oz0 keys list --tenant acme
`,
  "keys revoke": `oz0 keys revoke <key-id> [--as NAME] [--json]
oz0 keys revoke --job J --tenant T [--as NAME] [--json]

Revokes a key by its ID (k-..., from oz0 keys list), or every key of one job: a request that
carries it is answered 401 (revoked) from then on. The first revocation holds; audited with
who (--as, else OZ0_OPERATOR, else the login name). Exits 1 when there is no such key, or
nothing was left to revoke.

Examples:
  oz0 keys revoke k-3f9a0c21b7d4
  oz0 keys revoke --job job-7f3a --tenant acme
`,
};

const DEFAULT_EXPIRES_MS = 24 * 3600 * 1000;

async function withKeys<T>(use: (store: KeyStore) => Promise<T>): Promise<T> {
  const endpoints = await servicesForCommand();
  const redis = redisClient(endpoints, { maxRetriesPerRequest: 3 });
  try {
    return await use(redisKeyStore(redis, new Keys()));
  } finally {
    await redis.quit().catch(() => redis.disconnect());
  }
}

/** A key's state as a list shows it. */
export function keyState(b: KeyBinding, now: number): "active" | "expired" | "revoked" {
  return b.revoked_at !== null ? "revoked" : now >= b.expires_at ? "expired" : "active";
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

/** The keys as a table: never the key. */
export function formatKeys(list: readonly KeyBinding[], now: number): string {
  if (list.length === 0) return "no API key\n";
  const rows = [["ID", "TENANT", "AGENT", "JOB", "CREATED", "EXPIRES", "STATE"], ...list.map((b) => [b.id, b.tenant, b.agent, b.job_id, iso(b.created_at), iso(b.expires_at), keyState(b, now) + (b.revoked_by ? ` (by ${b.revoked_by})` : "")])];
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join("  ")).join("\n") + "\n";
}

/** The audit entry of a key made or revoked: the key's ID and binding, never the key. */
export function keyAuditEntry(kind: "key.created" | "key.revoked", b: KeyBinding, actor: string, at: number): AuditEvent {
  return {
    id: deriveId("api-key", kind, b.id),
    kind,
    tenant: b.tenant,
    tree_id: b.tree_id,
    job_id: b.job_id,
    actor,
    reason: null,
    facts: { key_id: b.id, agent: b.agent, run_id: b.run_id, created_by: b.created_by, expires_at: new Date(b.expires_at).toISOString() },
    numbers: {},
    ts: at,
  };
}

async function audit(entries: readonly AuditEvent[]): Promise<void> {
  if (entries.length === 0) return;
  const endpoints = await servicesForCommand();
  const log = createLogger({ component: "oz0" }, () => {});
  const kafka = new kafkajs.Kafka({ ...kafkaConfig("oz0-keys", endpoints, process.env, log), logLevel: kafkajs.logLevel.NOTHING });
  const serde = new Serde({ registryUrl: endpoints.registryUrl });
  await serde.register("AuditEvent");
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  try {
    await producer.send({ topic: "oz0.audit", acks: -1, messages: entries.map((e) => ({ key: e.tenant ?? "", value: serde.encode("AuditEvent", e) })) });
  } finally {
    await producer.disconnect();
  }
}

const said = (b: KeyBinding, now: number) => ({ ...b, state: keyState(b, now) });

export async function keysCreate(args: string[]): Promise<string> {
  const help = KEYS_HELP["keys create"] ?? "";
  const { values, positionals } = parse(help, args, {
    tenant: { type: "string" },
    agent: { type: "string" },
    job: { type: "string" },
    tree: { type: "string" },
    run: { type: "string" },
    expires: { type: "string" },
    as: { type: "string" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  });
  if (values.help) return help;
  if (positionals.length > 0) throw usage(`keys create takes no arguments, got ${positionals.join(" ")}\n\n${help}`);
  if (!values.tenant?.trim() || !values.agent?.trim()) throw usage(`keys create: give the tenant and the agent the key is bound to (--tenant T --agent A)\n\n${help}`);
  for (const flag of ["job", "tree", "run"] as const) if (values[flag] !== undefined && values[flag].trim() === "") throw usage(`--${flag} is empty: name the ${flag}, or leave the flag out\n`);
  let expiresMs = DEFAULT_EXPIRES_MS;
  if (values.expires !== undefined) {
    const d = tryParseDuration(values.expires);
    if (!d.ok || d.value <= 0) throw usage(`--expires ${values.expires}: ${d.ok ? "give a time above 0" : d.reason}, such as 90m, 24h or 7d\n`);
    expiresMs = d.value;
  }
  const by = person(values.as);
  const newJob = values.job === undefined;
  const job = values.job ?? `job-${randomUUID()}`;
  const now = Date.now();
  const made = await withKeys((store) =>
    store.create({ tenant: values.tenant as string, agent: values.agent as string, tree_id: values.tree ?? job, job_id: job, run_id: values.run ?? `${job}-run`, created_by: by, expires_at: now + expiresMs }, now),
  );
  const b = made.binding;
  try {
    await audit([keyAuditEntry("key.created", b, by, now)]);
  } catch (err) {
    // A key whose making is not in the audit log does not work.
    await withKeys((store) => store.revoke(b.id, by, Date.now())).catch(() => undefined);
    throw new Exit(1, `key ${b.id} was made but its audit entry could not be published (${err instanceof Error ? err.message : String(err)}), so it was revoked: is Kafka running? (npm start)\n`);
  }
  if (values.json) return `${JSON.stringify({ key: made.key, ...said(b, now), new_job: newJob })}\n`;
  return (
    `key ${b.id} made by ${by} for tenant ${b.tenant}, agent ${b.agent}: job ${b.job_id} (tree ${b.tree_id}, run ${b.run_id}); expires ${iso(b.expires_at)} (in ${formatDuration(expiresMs)})\n` +
    (newJob ? `job ${b.job_id} is a new ID and has not started: its runtime starts it under that ID (oz0 run starts a job and makes its key in one)\n` : "") +
    `the key, shown this once (only its hash is kept):\n${made.key}\n`
  );
}

export async function keysList(args: string[]): Promise<string> {
  const help = KEYS_HELP["keys list"] ?? "";
  const { values, positionals } = parse(help, args, { tenant: { type: "string" }, job: { type: "string" }, json: { type: "boolean", default: false }, help: { type: "boolean", default: false } });
  if (values.help) return help;
  if (positionals.length > 0) throw usage(`keys list takes no arguments, got ${positionals.join(" ")}\n\n${help}`);
  const list = await withKeys((store) => store.list({ ...(values.tenant === undefined ? {} : { tenant: values.tenant }), ...(values.job === undefined ? {} : { job_id: values.job }) }));
  const now = Date.now();
  return values.json ? `${JSON.stringify(list.map((b) => said(b, now)), null, 2)}\n` : formatKeys(list, now);
}

export async function keysRevoke(args: string[]): Promise<string> {
  const help = KEYS_HELP["keys revoke"] ?? "";
  const { values, positionals } = parse(help, args, { job: { type: "string" }, tenant: { type: "string" }, as: { type: "string" }, json: { type: "boolean", default: false }, help: { type: "boolean", default: false } });
  if (values.help) return help;
  const by = person(values.as);
  const now = Date.now();
  if (values.job !== undefined || values.tenant !== undefined) {
    if (positionals.length > 0) throw usage(`keys revoke takes a key ID or --job with --tenant, not both\n\n${help}`);
    if (!values.job || !values.tenant) throw usage(`keys revoke --job J --tenant T: a job's keys are named by both\n\n${help}`);
    const { job, tenant } = values;
    const revoked = await withKeys(async (store) => {
      await store.revokeJob(tenant, job, by, now);
      // Those this revocation revoked (not those revoked before): each audited.
      return (await store.list({ tenant, job_id: job })).filter((b) => b.revoked_at === now && b.revoked_by === by);
    });
    await audit(revoked.map((b) => keyAuditEntry("key.revoked", b, by, now)));
    if (revoked.length === 0) throw values.json ? new Exit(1, `${JSON.stringify({ tenant, job, revoked: [] })}\n`, "stdout") : new Exit(1, `job ${job} of tenant ${tenant} has no key left to revoke; nothing changed\n`);
    if (values.json) return `${JSON.stringify({ tenant, job, revoked: revoked.map((b) => said(b, now)) })}\n`;
    return `revoked ${revoked.length} key(s) of job ${job} of tenant ${tenant} as ${by}: ${revoked.map((b) => b.id).join(", ")}\n`;
  }
  const [id, ...rest] = positionals;
  if (!id || rest.length > 0) throw usage(`keys revoke takes one key ID (k-...), or --job J --tenant T\n\n${help}`);
  if (!isKeyId(id)) throw usage(`${id} is not a key ID: a key's ID is k- and 12 hex characters, as oz0 keys list shows it${id.startsWith("oz0_") ? " (that is a key itself: never paste it into a command line)" : ""}\n`);
  const b = await withKeys((store) => store.revoke(id, by, now));
  if (!b) throw new Exit(1, `no API key ${id} (never made, or gone a week past its expiry): see oz0 keys list\n`);
  if (b.revoked_at !== now || b.revoked_by !== by) throw values.json ? new Exit(1, `${JSON.stringify(said(b, now))}\n`, "stdout") : new Exit(1, `key ${id} was revoked already by ${b.revoked_by ?? "?"} at ${iso(b.revoked_at ?? 0)}; nothing changed\n`);
  await audit([keyAuditEntry("key.revoked", b, by, now)]);
  if (values.json) return `${JSON.stringify(said(b, now))}\n`;
  return `revoked ${id} as ${by}: the key of job ${b.job_id} of tenant ${b.tenant} (agent ${b.agent}) is refused from now on\n`;
}
