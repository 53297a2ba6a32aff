/**
 * Tenant and tree isolation as a property (FILE-2, FILE-3, FILE-4, OFF-8): seeded random
 * sequences of stores, offloads, reads back, file arguments, files handed at job starts and
 * erasures, run through the processors' cores (in memory, each input through its Avro schema)
 * over the real MinIO and Redis, against a model of who may read what. Every read is checked
 * against the model both ways, and every read the model forbids must answer byte for byte as a
 * read of a ref never stored (with that ref in its place): same error class, same message, same
 * fields, same outputs. The same tree IDs are used under every tenant.
 *
 * `OZ0_ISOLATION_SEED` and `OZ0_ISOLATION_STEPS` replay or lengthen a run; a failure names the
 * seed and the steps that led to it.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { random } from "../../client/synthetic.ts";
import type { AgentDefinition } from "../../config/agent.ts";
import { fillInProcessor } from "../../processors/fill-in/processor.ts";
import { FILES_META_KEY, FILES_NOT_FOUND_META_KEY } from "../../processors/files/arguments.ts";
import { fileArgumentsEnv, filesState, keptThreshold } from "../../processors/files/env.ts";
import { FILES_HANDED, filesJobsProcessor } from "../../processors/files-jobs/processor.ts";
import { fitResultsProcessor, type FitEnv } from "../../processors/fit-results/processor.ts";
import { READ_RESULT, readResultEnv, readResultProcessor } from "../../processors/read-result/index.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import type { Emit } from "../../processors/runner/processor.ts";
import { TestDriver } from "../../processors/runner/test-driver.ts";
import type { AuditEvent, JobEvent, ResultDelivered, ToolCall, ToolResult } from "../../schemas/types.ts";
import { FileNotFound } from "../../store/file-errors.ts";
import { FileStore } from "../../store/files.ts";
import { minioClient, refOf } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { deleteKeys, scanKeys } from "../../store/redis/slots.ts";
import { Keys } from "../../store/redis/keys.ts";
import { toolCall, uid } from "../support/events.ts";
import { endpoints } from "../support/kafka.ts";

const SEED = Number(process.env.OZ0_ISOLATION_SEED ?? 20_261_130);
const STEPS = Number(process.env.OZ0_ISOLATION_STEPS ?? 200);
const AGENT = "iso-reader";
/** Low, so that a few hundred tokens are offloaded. */
const OFFLOAD_TOKENS = 60;

/** Who may read what: grants per tenant and tree, and each tenant's conversation turns. */
class Model {
  readonly grants = new Map<string, Map<string, Set<string>>>();
  /** Per tenant: a turn's tree to the tree of the turn it follows ("" for the first). */
  readonly turns = new Map<string, Map<string, string>>();

  grant(tenant: string, tree: string, ref: string): void {
    const byTree = this.grants.get(tenant) ?? new Map<string, Set<string>>();
    this.grants.set(tenant, byTree);
    const refs = byTree.get(tree) ?? new Set<string>();
    byTree.set(tree, refs);
    refs.add(ref);
  }

  /** FILE-4: some tree of the tenant holds it. */
  tenantHolds(tenant: string, ref: string): boolean {
    return [...(this.grants.get(tenant)?.values() ?? [])].some((refs) => refs.has(ref));
  }

  erase(tenant: string, tree: string): void {
    this.grants.get(tenant)?.delete(tree);
  }

  /** FILE-3: the turns before this one, up to the first; a fork's own branch only. */
  earlier(tenant: string, tree: string): string[] {
    const turns = this.turns.get(tenant) ?? new Map<string, string>();
    const out: string[] = [];
    for (let t = turns.get(tree); t; t = turns.get(t)) out.push(t);
    return out;
  }

  /** FILE-2, FILE-3, OFF-8: its own tree's files and its earlier turns'; never another tenant's. */
  readable(tenant: string, tree: string, ref: string): boolean {
    return [tree, ...this.earlier(tenant, tree)].some((t) => this.grants.get(tenant)?.get(t)?.has(ref) === true);
  }
}

/** What a read answered, as plain data, with `ref` written as `<REF>` so two reads compare. */
function normalized(value: unknown, ref: string): string {
  return JSON.stringify(value).split(ref).join("<REF>");
}

function notFoundAsNull(err: unknown): null {
  if (err instanceof FileNotFound) return null;
  throw err;
}

function errorShape(err: unknown): unknown {
  if (!(err instanceof Error)) return { thrown: String(err) };
  return { class: err.constructor.name, name: err.name, message: err.message, fields: { ...err } };
}

describe("tenant and tree isolation on the real MinIO and Redis", () => {
  let redis: RedisClient;
  let files: FileStore;
  const keys = new Keys(uid("iso").replace(/-/g, "_"));
  const bucket = uid("oz0-iso").toLowerCase();
  const run = uid("iso");
  const tenants = [0, 1, 2].map((i) => `${run}-tenant-${i}`);
  /** The same tree IDs under every tenant. */
  const shared = [0, 1, 2, 3].map((i) => `${run}-tree-${i}`);
  const config = staticConfig([{ kind: "agent", id: AGENT, value: { name: AGENT, tools: ["docs"], limits: { tree: {} }, delegation: { allow: [] }, loops: {}, spend: {}, offload: OFFLOAD_TOKENS } satisfies AgentDefinition }]);

  beforeAll(async () => {
    redis = redisClient(endpoints(), { maxRetriesPerRequest: 3 });
    files = new FileStore({ client: minioClient(endpoints()), bucket, keys: PayloadKeys.fromMaster(randomBytes(32)) });
    await files.ensureBucket();
  });

  afterAll(async () => {
    if (files) {
      for (const t of tenants) await files.eraseTenant(t).catch(() => undefined);
      await files.client.removeBucket(bucket).catch(() => undefined);
    }
    if (redis) {
      for await (const batch of scanKeys(redis, `${keys.prefix}:*`)) await deleteKeys(redis, batch);
      redis.disconnect();
    }
  });

  it("FILE-2 FILE-3 FILE-4 OFF-8 no random sequence of stores, offloads, reads back, file arguments, files handed and erasures reads another tree's or tenant's file, and a file one may not read answers exactly as a ref never stored", async () => {
    const state = filesState(redis, keys);
    const rand = random(SEED);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)] as T;
    const chance = (p: number): boolean => rand() < p;

    // The processors' cores with the environments the pipeline gives them (processors/pipeline.ts).
    const fitEnv: FitEnv = {
      load: async (r) => (r.content_ref ? files.read(await state.reader(r.tenant, r.tree_id), r.content_ref).then((f) => f.bytes, notFoundAsNull) : null),
      threshold: keptThreshold(state, config),
      storeFile: (owner, bytes, options) => files.store(owner, bytes, options),
      config,
    };
    const fit = new TestDriver(fitResultsProcessor, fitEnv);
    const reader = new TestDriver(readResultProcessor, readResultEnv({ config, files, redis, keys, reader: (tenant, tree) => state.reader(tenant, tree) }));
    const fillIn = new TestDriver(fillInProcessor, { config, spendShare: () => Promise.resolve(null), files: fileArgumentsEnv(state, files) });
    const jobs = new TestDriver(filesJobsProcessor, { config, files, state });

    const model = new Model();
    const texts = new Map<string, string>();
    const trees = new Map<string, string[]>(tenants.map((t) => [t, [...shared]]));
    const conversation = new Map<string, string>(tenants.map((t) => [t, `${t}-conv`]));
    const turnTrees = new Map<string, string[]>(tenants.map((t) => [t, []]));
    const log: string[] = [];
    let counter = 0;
    const counts = { allowed: 0, forbidden: 0, stores: 0, handed: 0, erased: 0 };

    const newText = (long: boolean): string => {
      const n = counter++;
      const lines = Array.from({ length: long ? 40 : 3 }, (_, i) => `Line ${i} of document ${n} of run ${run}: ${Math.floor(rand() * 1e9).toString(36)}.`);
      return [`# Document ${n}`, "", ...lines].join("\n");
    };
    /** A text to store: mostly new, sometimes one any tenant stored already (the same ref elsewhere). */
    const someText = (long: boolean): string => (texts.size > 0 && chance(0.3) ? pick([...texts.values()]) : newText(long));
    const neverStored = (): string => refOf(randomBytes(24));
    /** A ref to read: mostly one stored somewhere (by any tenant), sometimes one never stored. */
    const someRef = (): string => (texts.size > 0 && chance(0.85) ? pick([...texts.keys()]) : neverStored());
    /** For a reader: often a ref the model lets it read, else any. */
    const someRefFor = (r: { tenant: string; tree: string }): string => {
      const mine = [r.tree, ...model.earlier(r.tenant, r.tree)].flatMap((t) => [...(model.grants.get(r.tenant)?.get(t) ?? [])]);
      return mine.length > 0 && chance(0.4) ? pick(mine) : someRef();
    };
    const someReader = (): { tenant: string; tree: string } => {
      const tenant = pick(tenants);
      return { tenant, tree: pick(trees.get(tenant) ?? shared) };
    };
    const ids = (tenant: string, tree: string) => ({ id: uid("evt"), tenant, tree_id: tree, job_id: tree, run_id: `${tree}-run`, call_id: uid("call"), agent: AGENT });
    const failMessage = (what: string) => `seed ${SEED}, step ${log.length}: ${what}\n  ${log.slice(-12).join("\n  ")}`;

    /** Checks one read against the model, and a forbidden one against a read of a ref never stored. */
    async function check<T>(op: string, r: { tenant: string; tree: string }, ref: string, attempt: (ref: string) => Promise<T>, granted: (out: T) => boolean): Promise<T> {
      const want = model.readable(r.tenant, r.tree, ref);
      const out = await attempt(ref);
      expect(granted(out), failMessage(`${op} by ${r.tenant}/${r.tree} of ${ref}: the model says ${want ? "readable" : "not readable"}`)).toBe(want);
      if (!want) {
        const never = neverStored();
        const baseline = await attempt(never);
        expect(normalized(out, ref), failMessage(`${op} of a file ${r.tenant}/${r.tree} may not read differs from a ref never stored`)).toBe(normalized(baseline, never));
        counts.forbidden++;
      } else {
        counts.allowed++;
      }
      return out;
    }

    const ops: Array<[number, () => Promise<void>]> = [
      [
        3,
        async () => {
          // A file stored by a tool of the tree (FILE-1's embedded files go the same way).
          const o = someReader();
          const text = someText(false);
          const { ref } = await files.store(o, Buffer.from(text));
          log.push(`store ${o.tenant}/${o.tree} ${ref.slice(16, 28)}`);
          texts.set(ref, text);
          model.grant(o.tenant, o.tree, ref);
          counts.stores++;
        },
      ],
      [
        2,
        async () => {
          // A model's result above the threshold, offloaded by fit-results as a file of its tree (OFF-3).
          const o = someReader();
          const text = someText(true);
          const content = JSON.stringify({ content: [{ type: "text", text }] });
          const result: ToolResult = { ...ids(o.tenant, o.tree), plugin: "docs", tool: "docs", function: "get_page", arguments: "{}", origin: "model", is_error: false, content, content_ref: null, size_bytes: content.length, ts: Date.now(), labels: [] };
          const { emits, rejected } = await fit.pipe(result);
          expect(rejected).toEqual([]);
          const stub = JSON.parse((emits.find((e) => e.to === "oz0.results-delivered")?.value as ResultDelivered).content) as { structuredContent?: { offloaded?: { ref: string } } };
          const ref = refOf(Buffer.from(text));
          expect(stub.structuredContent?.offloaded?.ref, failMessage("an offload's stub names its file")).toBe(ref);
          log.push(`offload ${o.tenant}/${o.tree} ${ref.slice(16, 28)}`);
          texts.set(ref, text);
          model.grant(o.tenant, o.tree, ref);
          counts.stores++;
        },
      ],
      [
        4,
        async () => {
          // oz.read_result, the reader being the call binding's tenant and tree (OFF-8).
          const r = someReader();
          const ref = someRefFor(r);
          const call = { ...toolCall(), ...ids(r.tenant, r.tree), ...READ_RESULT };
          log.push(`read_result ${r.tenant}/${r.tree} ${ref.slice(16, 28)}`);
          const out = await check(
            "read_result",
            r,
            ref,
            async (asked) => {
              const { emits, rejected } = await reader.pipe({ ...call, arguments: JSON.stringify({ ref: asked, view: "full", budget: 4000 }) });
              return { emits: emits.map((e: Emit) => ({ to: e.to, key: e.key, value: e.value })), rejected };
            },
            (o) => (o.emits.find((e) => e.to === "oz0.results-delivered")?.value as ResultDelivered).is_error === false,
          );
          const d = out.emits.find((e) => e.to === "oz0.results-delivered")?.value as ResultDelivered;
          if (!d.is_error) expect(d.content).toContain(JSON.stringify((texts.get(ref) ?? "").split("\n")[0]).slice(1, -1));
        },
      ],
      [
        3,
        async () => {
          // A call's file argument, resolved by the budget fill-in (FILE-1) for the call's tree.
          const r = someReader();
          const ref = someRefFor(r);
          const call = { ...toolCall(), ...ids(r.tenant, r.tree), plugin: "tests", tool: "tests", function: "run" };
          log.push(`file argument ${r.tenant}/${r.tree} ${ref.slice(16, 28)}`);
          await check(
            "file argument",
            r,
            ref,
            async (asked) => {
              const { emits, rejected } = await fillIn.pipe({ ...call, arguments: JSON.stringify({ archive: asked }) });
              expect(rejected).toEqual([]);
              return JSON.parse((emits[0]?.value as ToolCall).arguments) as { _meta?: Record<string, Record<string, string>> };
            },
            (args) => args._meta?.[FILES_META_KEY]?.archive !== undefined && args._meta[FILES_NOT_FOUND_META_KEY] === undefined,
          );
        },
      ],
      [
        2,
        async () => {
          // The file store itself, as fit-results and read_result read through it.
          const r = someReader();
          const ref = someRefFor(r);
          log.push(`read ${r.tenant}/${r.tree} ${ref.slice(16, 28)}`);
          const out = await check(
            "FileStore.read",
            r,
            ref,
            async (asked): Promise<{ ok?: string; error?: unknown }> => files.read(await state.reader(r.tenant, r.tree), asked).then((f) => ({ ok: f.bytes.toString("utf8") }), (err: unknown) => ({ error: errorShape(err) })),
            (o) => o.ok !== undefined,
          );
          if (out.ok !== undefined) expect(out.ok).toBe(texts.get(ref));
        },
      ],
      [
        1,
        async () => {
          // A result published by ref (FILE-2): read through the tree that publishes it.
          const r = someReader();
          const ref = someRefFor(r);
          log.push(`result by ref ${r.tenant}/${r.tree} ${ref.slice(16, 28)}`);
          const base = { ...ids(r.tenant, r.tree), plugin: "docs", tool: "docs", function: "get_page", arguments: "{}", origin: "flow_step" as const, is_error: false, content: null, size_bytes: 10, ts: 1, labels: [] };
          await check(
            "result by ref",
            r,
            ref,
            async (asked) => {
              const { emits, rejected } = await fit.pipe({ ...base, content_ref: asked });
              // The offset differs between two pipes; the error and its reason are what the publisher reads.
              return { emits: emits.map((e) => e.value), rejected: rejected.map((x) => ({ error: x.error, reason: x.reason })) };
            },
            // A readable file that is not an MCP result is refused for its shape, not as not found.
            (o) => !o.rejected.some((x) => /is not a file of tree/.test(x.reason)),
          );
        },
      ],
      [
        2,
        async () => {
          // A job's start: a turn of the tenant's conversation (FILE-3, a fork now and then), or a
          // child's start in a tree, handed files by a person (FILE-4), now and then without the permission.
          const tenant = pick(tenants);
          const turns = turnTrees.get(tenant) ?? [];
          const child = chance(0.3);
          const tree = child ? pick(trees.get(tenant) ?? shared) : `${tenant}-turn-${counter++}`;
          const previous = !child && turns.length > 0 && chance(0.85) ? pick(turns) : null;
          const asked = Array.from({ length: Math.floor(rand() * 4) }, someRef);
          const permitted = chance(0.9);
          const start: JobEvent = {
            ...ids(tenant, tree),
            job_id: child ? uid("child") : tree,
            parent_job_id: child ? tree : null,
            run_id: null,
            kind: "started",
            started_by: "person",
            delegation: child ? "delegation" : "none",
            depth: child ? 1 : 0,
            outcome: null,
            principal: "pat",
            team: null,
            permissions: permitted ? ["content"] : [],
            files: asked,
            chosen_tree_id: false,
            conversation_id: child ? null : (conversation.get(tenant) ?? null),
            previous_turn: previous,
            ts: Date.now(),
          };
          log.push(`${child ? "child start" : "turn"} ${tenant}/${tree}${previous ? ` after ${previous}` : ""} handed ${asked.map((r) => r.slice(16, 28)).join(",") || "nothing"}${permitted ? "" : " without permission"}`);
          const { emits, rejected } = await jobs.pipe(start);
          expect(rejected).toEqual([]);
          if (asked.length > 0 && !permitted) {
            expect(emits.map((e) => (e.value as { reason_code?: string }).reason_code)).toEqual(["content_permission"]);
            return;
          }
          if (!child) {
            model.turns.set(tenant, (model.turns.get(tenant) ?? new Map<string, string>()).set(tree, previous ?? ""));
            turns.push(tree);
            trees.get(tenant)?.push(tree);
          }
          const handed = [...new Set(asked)].filter((ref) => model.tenantHolds(tenant, ref));
          for (const ref of handed) model.grant(tenant, tree, ref);
          counts.handed += handed.length;
          if (asked.length > 0) {
            const audit = emits.find((e) => e.to === "oz0.audit")?.value as AuditEvent;
            expect(audit.kind).toBe(FILES_HANDED);
            expect(audit.facts.refs?.split(",").filter(Boolean).sort(), failMessage("the refs handed are those the tenant holds")).toEqual(handed.sort());
          }
        },
      ],
      [
        1,
        async () => {
          const o = someReader();
          const report = await files.eraseTree(o.tenant, o.tree);
          log.push(`erase ${o.tenant}/${o.tree}: ${report.erased.length} files`);
          expect([...report.erased].sort()).toEqual([...(model.grants.get(o.tenant)?.get(o.tree) ?? [])].sort());
          model.erase(o.tenant, o.tree);
          counts.erased += report.erased.length;
        },
      ],
    ];
    const total = ops.reduce((n, [w]) => n + w, 0);
    for (let step = 0; step < STEPS; step++) {
      let at = rand() * total;
      const op = ops.find(([w]) => (at -= w) < 0) ?? ops[0];
      await op?.[1]();
    }

    // At the end, every tree of every tenant against every ref stored anywhere.
    for (const tenant of tenants) {
      for (const tree of trees.get(tenant) ?? []) {
        const r = await state.reader(tenant, tree);
        for (const ref of texts.keys()) {
          const got = await files.readable(r, ref).then(() => true, (err: unknown) => notFoundAsNull(err) ?? false);
          expect(got, failMessage(`at the end, ${tenant}/${tree} reading ${ref}`)).toBe(model.readable(tenant, tree, ref));
        }
      }
    }
    // The sequence exercised what it should: reads both ways, files handed, erasures.
    expect(counts.forbidden).toBeGreaterThan(20);
    expect(counts.allowed).toBeGreaterThan(10);
    expect(counts.handed).toBeGreaterThan(0);
    expect(counts.erased).toBeGreaterThan(0);
  }, 600_000);
});
