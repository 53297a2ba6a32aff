/**
 * The parts every drill uses: a lab (its topics created, its Redis keys, removed at the end),
 * feeding inputs at a steady rate, a worker process to start and kill, a reader of everything
 * the lab's processor wrote, and a dump of the lab's Redis state with the lab's name taken out,
 * so two labs fed the same inputs can be compared key by key.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import type { RedisClient } from "../store/redis/client.ts";
import kafkajs from "kafkajs";
import type { Admin, Consumer, Kafka, Producer } from "kafkajs";
import type { Client as MinioClient } from "minio";
import type { Serde } from "../schemas/serde.ts";
import type { DeadLetter } from "../schemas/types.ts";
import type { Endpoints } from "../processors/runner/endpoints.ts";
import { FileStore } from "../store/files.ts";
import { PayloadKeys } from "../store/payload-keys.ts";
import { ensureTopics } from "../topology/create.ts";
import { labNames, type DrillSubject, type LabNames } from "./subjects.ts";
import { deleteKeys, scanKeys } from "../store/redis/slots.ts";
import { whileNewTopic } from "./brokers.ts";

export interface Services {
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly serde: Serde;
  readonly redis: RedisClient;
  readonly minio: MinioClient;
  /** Handed to worker processes, so they reach the same services. */
  readonly endpoints: Endpoints;
}

export interface Lab extends LabNames {
  readonly subject: DrillSubject;
  close(): Promise<void>;
}

export function newLabId(): string {
  return randomUUID().slice(0, 8);
}

export async function openLab(s: Services, subject: DrillSubject, lab = newLabId()): Promise<Lab> {
  const names = labNames(subject, lab);
  await ensureTopics(s.admin, names.specs);
  return {
    ...names,
    subject,
    close: async () => {
      await s.admin.deleteTopics({ topics: names.specs.map((t) => t.name), timeout: 30_000 }).catch(() => undefined);
      for await (const batch of scanKeys(s.redis, `${names.keys.prefix}:*`, 500)) {
        if (batch.length > 0) await deleteKeys(s.redis, batch);
      }
      if (await s.minio.bucketExists(names.bucket)) {
        const store = new FileStore({ client: s.minio, bucket: names.bucket, keys: PayloadKeys.fromEnv() });
        for (const tenant of subject.tenants) await store.eraseTenant(tenant);
        await s.minio.removeBucket(names.bucket).catch(() => undefined);
      }
    },
  };
}

export interface Message {
  readonly key: string | null;
  readonly value: Buffer | null;
}

/**
 * The producer of a lab's inputs: idempotent (one request in flight, the broker dropping a
 * resent batch it already has), so a send retried across a broker's loss or a leader's move
 * writes each input once; its retries last about two minutes, and `feed` tries again after.
 */
export function producerOf(kafka: Kafka): Producer {
  return kafka.producer({
    allowAutoTopicCreation: false,
    createPartitioner: kafkajs.Partitioners.DefaultPartitioner,
    idempotent: true,
    maxInFlightRequests: 1,
    retry: { retries: 50, initialRetryTime: 100, maxRetryTime: 3_000 },
  });
}

/**
 * Sends messages at about `perSecond`, in small sends, calling `progress` with the count sent
 * after each; resolves when all are sent.
 */
export async function feed(producer: Producer, topic: string, messages: readonly Message[], perSecond: number, progress: (sent: number) => void | Promise<void> = () => {}): Promise<void> {
  const chunk = Math.max(1, Math.round(perSecond / 20));
  const started = Date.now();
  for (let i = 0; i < messages.length; i += chunk) {
    const part = messages.slice(i, i + chunk);
    await sendSurely(producer, topic, part);
    const sent = i + part.length;
    await progress(sent);
    const due = started + (sent * 1000) / perSecond;
    const wait = due - Date.now();
    if (wait > 0) await sleep(wait);
  }
}

/**
 * Sends, retrying for up to `patienceMs` when the broker cannot be reached (an outage drill
 * stops it for longer than kafkajs's own retries last), as a runtime holding its events would.
 */
async function sendSurely(producer: Producer, topic: string, part: readonly Message[], patienceMs = 180_000): Promise<void> {
  const until = Date.now() + patienceMs;
  for (;;) {
    try {
      await producer.send({ topic, messages: part.map((m) => ({ key: m.key, value: m.value })) });
      return;
    } catch (err) {
      if (Date.now() > until) throw err;
      await sleep(1_000);
    }
  }
}

export interface WorkerStats {
  in: number;
  out: number;
  deadLetters: number;
  rss: number;
  /** The dependency a batch has been failing on past the retry bound (the processor is not ready), or null. */
  failing: string | null;
}

/** A processor in a process of its own (drills/worker.ts), which the drill may kill. */
export class Worker {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stats: WorkerStats = { in: 0, out: 0, deadLetters: 0, rss: 0, failing: null };
  peakRss = 0;
  /** Whether the worker ever reported itself not ready (a dependency failing past the retry bound). */
  unhealthySeen = false;
  private stderrTail = "";
  private stderrLine = "";
  /** Commits whose answer never came, as the worker's log settled them (transport.ts, `landedAfterAll`). */
  readonly inDoubt = { landed: 0, notLanded: 0, unknown: 0 };

  constructor(subject: string, lab: string, env: Record<string, string> = {}) {
    const script = fileURLToPath(new URL("./worker.ts", import.meta.url));
    this.child = spawn(process.execPath, ["--import", "tsx", script, subject, lab], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, OZ0_LOG_LEVEL: process.env.OZ0_LOG_LEVEL ?? "warn", ...env },
    });
    let markReady: () => void = () => {};
    let failReady: (e: Error) => void = () => {};
    this.ready = new Promise<void>((resolve, reject) => ((markReady = resolve), (failReady = reject)));
    let buffered = "";
    this.child.stdout?.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        try {
          const v = JSON.parse(line) as Partial<WorkerStats> & { ready?: boolean };
          if (v.ready) markReady();
          else if (typeof v.in === "number") {
            this.stats = { ...(v as WorkerStats), failing: v.failing ?? null };
            this.peakRss = Math.max(this.peakRss, this.stats.rss);
            if (this.stats.failing !== null) this.unhealthySeen = true;
          }
        } catch {
          // not a stats line
        }
      }
    });
    this.child.stderr?.on("data", (chunk: Buffer) => {
      const text = chunk.toString("utf8");
      this.stderrTail = (this.stderrTail + text).slice(-20_000);
      const lines = (this.stderrLine + text).split("\n");
      this.stderrLine = lines.pop() ?? "";
      for (const line of lines) this.countInDoubt(line);
    });
    this.exited = new Promise((resolve) => {
      this.child.once("exit", (code, signal) => {
        failReady(new Error(`the ${subject} worker exited before it was ready (code ${code}, signal ${signal}): ${this.stderrTail}`));
        resolve({ code, signal });
      });
    });
  }

  private countInDoubt(line: string): void {
    if (!line.includes("a commit that failed") && !line.includes("whether a failed commit landed")) return;
    let msg = "";
    try {
      msg = (JSON.parse(line) as { msg?: string }).msg ?? "";
    } catch {
      return;
    }
    if (msg.startsWith("a commit that failed had landed")) this.inDoubt.landed++;
    else if (msg.startsWith("a commit that failed did not land")) this.inDoubt.notLanded++;
    else if (msg.startsWith("whether a failed commit landed is unknown")) this.inDoubt.unknown++;
  }

  get log(): string {
    return this.stderrTail;
  }

  kill9(): Promise<unknown> {
    this.child.kill("SIGKILL");
    return this.exited;
  }

  async stop(timeoutMs = 30_000): Promise<void> {
    this.child.kill("SIGTERM");
    const t = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    await this.exited;
    clearTimeout(t);
  }
}

export interface Output {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  /** The input this output answers: an output's `input_id`, or the ID inside a dead letter's input. */
  readonly inputId: string;
  readonly deadLetter: boolean;
  readonly value: Record<string, unknown>;
}

/**
 * Reads every output of a lab as a downstream consumer would: read committed, from the start.
 * With `uncommitted`, as the runtime client reads its answers (`answersBeforeCommit`): every
 * output as soon as it is written, an aborted transaction's too.
 */
export class OutputReader {
  private readonly consumer: Consumer;
  readonly outputs: Output[] = [];
  readonly answered = new Set<string>();
  undecodable = 0;
  /**
   * Records already read, by topic, partition and offset: a reader whose consumer restarts (its
   * broker lost) reads again from its last committed offsets, and a record read twice at one
   * offset is the same record, not a second output.
   */
  private readonly read = new Set<string>();

  private readonly serde: Serde;
  private readonly lab: Lab;

  constructor(kafka: Kafka, serde: Serde, lab: Lab, opts: { readonly uncommitted?: boolean } = {}) {
    this.serde = serde;
    this.lab = lab;
    // A fetch with nothing to read returns within 200 ms (kafkajs waits 5 s by default): the
    // reader's stop waits for its fetch in flight, so an idle reader with the default took
    // about 3.5 s to stop at the end of every drill. Records are read as soon as they come either way.
    this.consumer = kafka.consumer({ groupId: `drill.reader.${randomUUID()}`, readUncommitted: opts.uncommitted ?? false, allowAutoTopicCreation: false, maxWaitTimeInMs: 200 });
  }

  async start(): Promise<void> {
    await this.consumer.connect();
    // On a cluster, a broker may not know the lab's new topics for a moment (retriable).
    await whileNewTopic(() => this.consumer.subscribe({ topics: this.lab.answers.map((a) => a.topic), fromBeginning: true }));
    const spec = new Map(this.lab.answers.map((a) => [a.topic, a]));
    const inputSchema = this.lab.subject.kind.schema;
    await this.consumer.run({
      eachBatch: async ({ batch }) => {
        const a = spec.get(batch.topic);
        if (!a) return;
        for (const m of batch.messages) {
          const at = `${batch.topic}/${batch.partition}/${m.offset}`;
          if (this.read.has(at)) continue;
          this.read.add(at);
          try {
            const value = await this.serde.decode<Record<string, unknown>>(a.schema, m.value);
            let inputId: string;
            if (a.deadLetters) {
              const dl = value as unknown as DeadLetter;
              inputId = await this.serde
                .decode<{ id: string }>(inputSchema, dl.value)
                .then((v) => v.id)
                .catch(() => `${dl.topic}/${dl.partition}/${dl.offset}`);
            } else {
              inputId = String(value.input_id);
            }
            this.outputs.push({ topic: batch.topic, partition: batch.partition, offset: m.offset, inputId, deadLetter: a.deadLetters, value });
            this.answered.add(inputId);
          } catch {
            this.undecodable++;
          }
        }
      },
    });
  }

  /** Waits until every ID is answered, or the time is up; returns how many are still missing. */
  async waitFor(ids: readonly string[], timeoutMs: number): Promise<number> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const missing = ids.filter((id) => !this.answered.has(id)).length;
      if (missing === 0 || Date.now() > until) return missing;
      await sleep(50);
    }
  }

  stop(): Promise<void> {
    return this.consumer.disconnect();
  }
}

/**
 * Outputs by input ID, each as canonical JSON without its timestamp, after dropping outputs
 * whose own ID was already read (as a consumer dropping duplicates by ID does).
 */
export function answersById(outputs: readonly Output[]): Map<string, string[]> {
  const by = new Map<string, string[]>();
  for (const o of unique(outputs)) {
    const { ts: _ts, ...rest } = o.value;
    const shown = o.deadLetter ? JSON.stringify({ dead: true, reason: rest.reason, error: rest.error }) : JSON.stringify(rest);
    const list = by.get(o.inputId) ?? [];
    list.push(shown);
    by.set(o.inputId, list);
  }
  for (const list of by.values()) list.sort();
  return by;
}

function outputId(o: Output): string {
  return typeof o.value.id === "string" ? o.value.id : `${o.topic}/${o.partition}/${o.offset}`;
}

function shown(o: Output): string {
  const { ts: _ts, ...rest } = o.value;
  return JSON.stringify(rest);
}

/** The first output of each ID. */
export function unique(outputs: readonly Output[]): Output[] {
  const seen = new Set<string>();
  return outputs.filter((o) => {
    const id = outputId(o);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/** Outputs whose own ID was read more than once (what a consumer dropping duplicates by ID drops). */
export function duplicates(outputs: readonly Output[]): number {
  return outputs.length - unique(outputs).length;
}

/** IDs read more than once with different content: duplicates a consumer could not safely drop. */
export function conflicting(outputs: readonly Output[]): number {
  const first = new Map<string, string>();
  const bad = new Set<string>();
  for (const o of outputs) {
    const id = outputId(o);
    const was = first.get(id);
    if (was === undefined) first.set(id, shown(o));
    else if (was !== shown(o)) bad.add(id);
  }
  return bad.size;
}

/**
 * Outputs read before their commit (`early`) that no committed output matches: none with their
 * ID was committed, or one was with other content. A runtime taking answers before their commit
 * (and dropping later copies by ID) could have acted on each of these; there must be none.
 */
export function unmatchedEarly(early: readonly Output[], committed: readonly Output[]): number {
  const kept = new Map<string, string>();
  for (const o of committed) if (!kept.has(outputId(o))) kept.set(outputId(o), shown(o));
  const bad = new Set<string>();
  for (const o of early) if (kept.get(outputId(o)) !== shown(o)) bad.add(outputId(o));
  return bad.size;
}

/**
 * The lab's Redis state, key by key, with the lab's name replaced by `<lab>` in keys and
 * values, without TTLs. Two labs fed the same inputs in the same order must dump the same,
 * with one allowance: a key shared by every partition (a tenant's month, `{tenant:...}`) keeps
 * per-request memos (hash fields named `<kind>:<request>`) of its running total at that
 * moment, which depends on how the partitions happened to interleave. For those the dump keeps
 * which requests were counted and the totals, not the snapshots. And a run's loop lane keeps
 * the replay memos of its last batch per source only (`memo:<source>:<offset>`, listed in
 * `memos:<source>`), so which remain depends on where batches happened to start: they are left
 * out. The decisions, compared elsewhere, show that every replay answered as the first time.
 */
export async function dumpState(redis: RedisClient, lab: LabNames): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const strip = (s: string): string => s.split(lab.lab).join("<lab>");
  const keys: string[] = [];
  for await (const batch of scanKeys(redis, `${lab.keys.prefix}:*`, 500)) keys.push(...batch);
  for (const key of keys) {
    const type = await redis.type(key);
    let value: unknown;
    if (type === "string") value = await redis.get(key);
    else if (type === "hash") {
      const shared = key.includes("{tenant:");
      const lane = /:loop:[a-z]+$/.test(key);
      value = Object.entries(await redis.hgetall(key))
        .filter(([f]) => !(lane && (f.startsWith("memo:") || f.startsWith("memos:"))))
        .map(([f, v]): [string, string] => [f, shared && f.includes(":") ? "(memo)" : v])
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    }
    else if (type === "set") value = (await redis.smembers(key)).sort();
    else if (type === "zset") value = await redis.zrange(key, 0, -1, "WITHSCORES");
    else if (type === "list") value = await redis.lrange(key, 0, -1);
    else value = `(${type})`;
    out.set(strip(key), strip(JSON.stringify(value)));
  }
  return out;
}

/** Keys whose values differ, or that only one side has. */
export function stateDifferences(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): string[] {
  const diff: string[] = [];
  for (const [k, v] of a) if (b.get(k) !== v) diff.push(k);
  for (const k of b.keys()) if (!a.has(k)) diff.push(k);
  return diff.sort();
}
