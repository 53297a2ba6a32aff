/**
 * `oz0 run` on the whole pipeline (LIM-1, FILE-5): a process of its own around a small node
 * script, as a person runs it. The script sees the job's environment (the gateway as both
 * providers' base URL, the job's key, OZ0_JOB ...); the job's start and end are on oz0.jobs with
 * its outcome; the exit status passes through; --timeout and the agent's limits.timeout stop a
 * sleeping script with AgentTimeout; SIGTERM to oz0 run is passed on and the job still ends; a
 * start the file rules refuse exits 1 with their words and runs nothing. The job's key works
 * while the job runs and is revoked when it ends.
 *
 * The pipeline's groups have a prefix of this run and start at their inputs' end. The agents
 * are `test/fixtures/run-config/`.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pipeline } from "../../topology/run.ts";
import { RuntimeClient } from "../../client/runtime-client.ts";
import { filesState } from "../../processors/files/env.ts";
import { endpointsEnv } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { JobEvent } from "../../schemas/types.ts";
import { redisKeyStore } from "../../client/gateway/redis-store.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { jobEvent, uid } from "../support/events.ts";
import { collect, endpoints, serde as testSerde } from "../support/kafka.ts";
import { startTestPipeline, stopTestPipeline } from "../support/pipeline.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CONFIG_DIR = fileURLToPath(new URL("../fixtures/run-config/", import.meta.url));
const SCRIPT = fileURLToPath(new URL("../fixtures/run/script.mjs", import.meta.url));
const GATEWAY = "http://127.0.0.1:8941";

interface Ran {
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
}

/** `oz0 run ...` as a process of its own; `during` is called with it once it runs. */
function oz0Run(args: readonly string[], during?: (pid: number) => void): Promise<Ran> {
  const env = { ...process.env, ...endpointsEnv(endpoints()), OZ0_LOG_LEVEL: "error", OZ0_GATEWAY_URL: GATEWAY, OZ0_OPERATOR: "run-tester" };
  const child = spawn(process.execPath, [join(ROOT, "bin/oz0.mjs"), "run", ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (b: Buffer) => (out += b.toString("utf8")));
  child.stderr.on("data", (b: Buffer) => (err += b.toString("utf8")));
  if (during && child.pid !== undefined) during(child.pid);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, out, err }));
  });
}

const seen = (file: string): Record<string, string> => JSON.parse(readFileSync(file, "utf8")) as Record<string, string>;

async function until<T>(what: string, f: () => Promise<T | undefined | null | false>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe("oz0 run on the whole pipeline", () => {
  const run = randomUUID().slice(0, 8);
  const tenant = `run-acme-${run}`;
  const log = createLogger({ test: "oz0-run" }, () => {});
  const dir = mkdtempSync(join(tmpdir(), "oz0-run-"));
  let pipeline: Pipeline | undefined;
  let serde: Serde;
  let redis: RedisClient;

  beforeAll(async () => {
    pipeline = await startTestPipeline(`oz0-run-${run}`, CONFIG_DIR, "oz0 run test agents", log);
    serde = await testSerde();
    redis = redisClient(endpoints(), { maxRetriesPerRequest: 3 });
  }, 240_000);

  afterAll(async () => {
    await redis?.quit().catch(() => undefined);
    await stopTestPipeline(pipeline);
  }, 120_000);

  const jobEvents = (job: string, want: number) => collect<JobEvent>("oz0.jobs", "JobEvent", serde, (e) => e.tenant === tenant && e.job_id === job, want, 60_000, 1_000);

  it("LIM-1 the command sees the gateway, the job's key and its job; the job starts as a person started it and ends succeeded; exit 0", async () => {
    const file = join(dir, "env-ok.json");
    const keys = redisKeyStore(redis, new Keys());
    const ran = await oz0Run(["--tenant", tenant, "--agent", "run-plain", "--budget", "1.5", "--timeout", "10m", "--", process.execPath, SCRIPT, file, "exit", "0"]);
    expect(ran.err).toBe("");
    expect(ran.code).toBe(0);
    const during = seen(file);
    const job = during.OZ0_JOB ?? "";
    expect(job).toMatch(/^run-/);
    expect(during).toMatchObject({ OPENAI_BASE_URL: `${GATEWAY}/v1`, ANTHROPIC_BASE_URL: GATEWAY, OZ0_GATEWAY_URL: GATEWAY, OZ0_TENANT: tenant, OZ0_AGENT: "run-plain", OZ0_TREE: job });
    expect(during.OZ0_RUN).toMatch(new RegExp(`^${job}-run-`));
    expect(during.OPENAI_API_KEY).toMatch(/^oz0_/);
    expect(during.ANTHROPIC_API_KEY).toBe(during.OPENAI_API_KEY);

    const events = await jobEvents(job, 2);
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({ kind: "started", parent_job_id: null, started_by: "person", principal: "run-tester", timeout_ms: 600_000, budget_usd: 1.5, chosen_tree_id: false, run_id: during.OZ0_RUN });
    expect(events[1]).toMatchObject({ kind: "ended", outcome: "succeeded", run_id: during.OZ0_RUN });

    // The key was bound to the job by the project, and revoked with its end.
    const check = await keys.check(during.OPENAI_API_KEY ?? "", Date.now());
    expect(check).toMatchObject({ ok: false, reason: "revoked" });
    const [binding] = await keys.list({ tenant, job_id: job });
    expect(binding).toMatchObject({ tenant, agent: "run-plain", job_id: job, tree_id: job, run_id: during.OZ0_RUN, created_by: "run-tester" });
    expect(binding?.expires_at).toBe((events[0]?.ts ?? 0) + 600_000);
  }, 120_000);

  it("the command's exit status passes through, and the job ends failed", async () => {
    const file = join(dir, "env-fail.json");
    const ran = await oz0Run(["--tenant", tenant, "--agent", "run-plain", "--", process.execPath, SCRIPT, file, "exit", "3"]);
    expect(ran.code).toBe(3);
    const job = seen(file).OZ0_JOB ?? "";
    const events = await jobEvents(job, 2);
    expect(events.map((e) => [e.kind, e.outcome])).toEqual([["started", null], ["ended", "failed"]]);
  }, 120_000);

  it("LIM-1 past --timeout the command is stopped (SIGTERM) and the job fails with AgentTimeout; the exit status is the command's", async () => {
    const file = join(dir, "env-timeout.json");
    const started = Date.now();
    const ran = await oz0Run(["--tenant", tenant, "--agent", "run-plain", "--timeout", "4s", "--", process.execPath, SCRIPT, file, "sleep", "exit-on-term"]);
    expect(ran.code).toBe(7);
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_000);
    const job = seen(file).OZ0_JOB ?? "";
    expect(ran.err).toMatch(new RegExp(`job ${job} ran past its 4s \\(run --timeout\\): it fails with AgentTimeout, and the command was stopped \\(SIGTERM\\)`));
    const events = await jobEvents(job, 2);
    expect(events[1]).toMatchObject({ kind: "ended", outcome: "AgentTimeout" });
  }, 120_000);

  it("LIM-1 the agent's limits.timeout, shorter than --timeout, stops it; a command that dies of the signal exits 128+15", async () => {
    const file = join(dir, "env-brief.json");
    const ran = await oz0Run(["--tenant", tenant, "--agent", "run-brief", "--timeout", "1h", "--", process.execPath, SCRIPT, file, "sleep", "default"]);
    expect(ran.code).toBe(143);
    const job = seen(file).OZ0_JOB ?? "";
    expect(ran.err).toMatch(/ran past its 3s \(limits\.timeout\): it fails with AgentTimeout/);
    expect(ran.err).toMatch(/the command was ended by SIGTERM: exit status 143/);
    const events = await jobEvents(job, 2);
    expect(events[1]).toMatchObject({ kind: "ended", outcome: "AgentTimeout" });
  }, 120_000);

  it("SIGTERM to oz0 run is passed on to the command, and the job still ends (cancelled)", async () => {
    const file = join(dir, "env-term.json");
    const ran = await oz0Run(["--tenant", tenant, "--agent", "run-plain", "--", process.execPath, SCRIPT, file, "sleep", "default"], (pid) => {
      void until("the command runs", () => Promise.resolve(existsSync(file))).then(() => process.kill(pid, "SIGTERM"));
    });
    expect(ran.code).toBe(143);
    const job = seen(file).OZ0_JOB ?? "";
    expect(ran.err).toMatch(/SIGTERM passed on to the command; job .* ends cancelled/);
    const events = await jobEvents(job, 2);
    expect(events[1]).toMatchObject({ kind: "ended", outcome: "cancelled" });
  }, 120_000);

  it("FILE-5 a start under a chosen ID that is a conversation's turn is refused: exit 1 with the reason, the command never runs", async () => {
    const turn = uid("run-turn");
    const client = await RuntimeClient.connect(endpoints(), { log, listen: [] });
    try {
      await client.publishJobEvents([jobEvent(turn, "started", { id: uid("run-turn-start"), tenant, tree_id: turn, agent: "run-plain", started_by: "app", conversation_id: uid("run-conv") })]);
    } finally {
      await client.close();
    }
    await until("the turn is recorded", async () => (await filesState(redis).tree(tenant, turn))?.conversation);
    const file = join(dir, "env-refused.json");
    const ran = await oz0Run(["--tenant", tenant, "--agent", "run-plain", "--id", turn, "--", process.execPath, SCRIPT, file, "exit", "0"]);
    expect(ran.code).toBe(1);
    expect(ran.err).toMatch(new RegExp(`the job is not started \\(tree_is_turn\\): The job is not started: tree ID ${turn} is a turn of a conversation`));
    expect(existsSync(file)).toBe(false);
  }, 120_000);

  it("FILE-5 a start under a chosen ID no tree has goes ahead under that ID", async () => {
    const id = uid("run-chosen");
    const file = join(dir, "env-chosen.json");
    const ran = await oz0Run(["--tenant", tenant, "--agent", "run-plain", "--id", id, "--", process.execPath, SCRIPT, file, "exit", "0"]);
    expect(ran.code).toBe(0);
    expect(seen(file)).toMatchObject({ OZ0_JOB: id, OZ0_TREE: id });
    const events = await jobEvents(id, 2);
    expect(events[0]).toMatchObject({ kind: "started", chosen_tree_id: true, tree_id: id });
    expect(events[1]).toMatchObject({ kind: "ended", outcome: "succeeded" });
  }, 120_000);

  it("a usage error exits 2 and starts nothing", async () => {
    const ran = await oz0Run(["--tenant", tenant, "--agent", "run-plain", "--id", "no/slashes", "--", "true"]);
    expect(ran.code).toBe(2);
    expect(ran.err).toMatch(/--id "no\/slashes": a job's ID holds letters, digits/);
  }, 60_000);
});
