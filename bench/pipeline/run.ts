/**
 * The pipeline benchmark: each processor's throughput and latency beside a bare kafkajs
 * passthrough of the same events, in the same run, reported as ratios.
 *
 *   npx tsx bench/pipeline/run.ts [--events N] [--results M] [--seconds S] [--rate R] [--latency-seconds L] [--only loops,limits,fit] [--out FILE]
 *
 * For each input (tool calls, model calls, tool results) it pre-produces N realistic events
 * to a fresh topic per subject (same bytes, same keys, the real topic's partition count), then
 * runs each subject under a fresh consumer group from the start of them:
 *
 *   passthrough      bare kafkajs eachBatch, no decoding, one send per batch (the baseline)
 *   passthrough-txn  the same in a transaction per batch with sendOffsets (exactly-once)
 *   runner-identity  the runner with a core that decodes, emits unchanged and re-encodes
 *   <processor>      loop-calls, limits-model-calls or fit-results under the runner
 *
 * Throughput: N inputs over the time from the subject's first batch to the last answer read
 * by a read-committed consumer (bounded by S seconds). Latency: then R events a second for L
 * seconds, each stamped when sent; latency is from the send to its answer being readable.
 * Every subject uses its own topics (`bench.<uid>.*`, deleted at the end) and Redis keys under
 * a prefix of its own (`bench_<uid>:*`, deleted at the end); nothing of the live pipeline is
 * read or written. Services: the OZ0_* endpoints, else the local stack's ports; the stack is
 * never started or stopped here.
 *
 * The table goes to stdout and to --out (default bench/out/pipeline.md). The exit code is 0 only
 * when every subject answered its whole backlog in time.
 */
import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { redisClient } from "../../store/redis/client.ts";
import { Kafka, Partitioners, type Admin } from "kafkajs";
import type { FitEnv } from "../../processors/fit-results/processor.ts";
import { limitsEnv } from "../../processors/limits/index.ts";
import { RedisLoopStore, type LoopEnv } from "../../processors/loops/index.ts";
import { PIPELINE_TOPOLOGY } from "../../topology/pipeline.ts";
import { staticConfig } from "../../processors/runner/config-table.ts";
import { endpointsFromEnv, kafkaConfig, PIPELINE_REDIS } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { Processor } from "../../processors/runner/processor.ts";
import { DEAD_LETTER_TOPIC } from "../../processors/runner/runner.ts";
import { Serde } from "../../schemas/serde.ts";
import { Keys } from "../../store/redis/keys.ts";
import { ensureTopics } from "../../topology/create.ts";
import { topic as topicSpec, type TopicName, type TopicSpec } from "../../topology/topics.ts";
import { ThreadedCollector, type OutputTopic } from "./collect.ts";
import { CpuMeter, type CpuSpent } from "./cpu.ts";
import { BENCH_CONFIG_ROWS, loadCorpus, modelCalls, toolCalls, toolResults, type BenchEvent, type EventKind } from "./events.ts";
import { identityProcessor, startPassthrough, startTransactionalPassthrough, startUnderRunner, type RunningSubject, type SubjectContext } from "./subjects.ts";
import { deleteKeys, scanKeys } from "../../store/redis/slots.ts";

const { values } = parseArgs({
  options: {
    events: { type: "string", default: "5000" },
    results: { type: "string", default: "1500" },
    seconds: { type: "string", default: "40" },
    rate: { type: "string", default: "50" },
    "latency-seconds": { type: "string", default: "3" },
    only: { type: "string", default: "loops,limits,fit" },
    out: { type: "string", default: "" },
  },
});
const N = Number(values.events);
const RESULTS = Number(values.results);
const SECONDS = Number(values.seconds);
const RATE = Number(values.rate);
const LATENCY_SECONDS = Number(values["latency-seconds"]);
const ONLY = new Set(values.only.split(",").map((s) => s.trim()));
if (!(N > 0 && RESULTS > 0 && SECONDS > 0 && RATE > 0 && LATENCY_SECONDS > 0)) {
  process.stderr.write("usage: npx tsx bench/pipeline/run.ts [--events N>0] [--results N>0] [--seconds S>0] [--rate R>0] [--latency-seconds L>0] [--only loops,limits,fit] [--out FILE]\n");
  process.exit(2);
}

// The runner and kafkajs log at info; a benchmark wants warnings only, unless told otherwise.
process.env.OZ0_LOG_LEVEL ??= "warn";
/**
 * kafkajs logs each CONCURRENT_TRANSACTIONS answer (a transaction begun while the previous
 * one's commit markers are still being written) as an error, and retries it after a backoff.
 * They are counted per subject, as part of what exactly-once costs, and kept out of the log.
 */
let txnRetries = 0;
const CONCURRENT = /concurrent operation on the same transaction|CONCURRENT_TRANSACTIONS/;
const log = createLogger({ component: "bench-pipeline" }, (line) => {
  if (CONCURRENT.test(line)) {
    if (line.includes('"msg":"Response ')) txnRetries++;
    return;
  }
  process.stderr.write(line);
});
const say = (line: string): void => void process.stderr.write(`${line}\n`);

const endpoints = endpointsFromEnv();
const uid = randomUUID().slice(0, 8);
const kafka = new Kafka(kafkaConfig(`oz0-bench-${uid}`, endpoints, process.env, log));
const admin: Admin = kafka.admin();
const serde = new Serde({ registryUrl: endpoints.registryUrl });
// The pipeline's own Redis settings, so the processors run here as they do there.
const redis = redisClient(endpoints, PIPELINE_REDIS);
const keys = new Keys(`bench_${uid}`);
// FIT-8: the docs plugin's manifest too, so its results are fitted.
const config = staticConfig(BENCH_CONFIG_ROWS);

type SubjectName = "passthrough" | "passthrough-txn" | "runner-identity" | "processor";

interface Group {
  readonly short: string;
  readonly kind: EventKind<{ id: string; ts: number }>;
  readonly processor: Processor<never, unknown>;
  readonly env: () => unknown;
  /** What the issue counts: decisions, admissions, deliveries. */
  readonly answers: string;
  /** Backlog size: --events, or --results for the tool results (40 times bigger each). */
  readonly count: number;
}

const fitEnv: FitEnv = {
  load: () => Promise.resolve(null),
  threshold: () => 10_000,
  storeFile: () => Promise.reject(new Error("the benchmark's results stay under the offload threshold: nothing should be stored")),
  config,
};

const groups: Group[] = [];
if (ONLY.has("loops")) {
  groups.push({ short: "calls", kind: toolCalls, processor: PIPELINE_TOPOLOGY.node("loop-calls").processor, env: (): LoopEnv => ({ config, store: new RedisLoopStore(redis, keys) }), answers: "decisions", count: N });
}
if (ONLY.has("limits")) {
  groups.push({ short: "model", kind: modelCalls, processor: PIPELINE_TOPOLOGY.node("limits-model-calls").processor, env: () => limitsEnv({ redis, config, keys }), answers: "admissions", count: N });
}
if (ONLY.has("fit")) {
  groups.push({ short: "results", kind: toolResults(await loadCorpus()), processor: PIPELINE_TOPOLOGY.node("fit-results").processor, env: () => fitEnv, answers: "deliveries", count: RESULTS });
}
if (groups.length === 0) {
  say("--only names none of loops, limits, fit");
  process.exit(2);
}

const SUBJECTS: SubjectName[] = ["passthrough", "passthrough-txn", "runner-identity", "processor"];

interface Plan {
  readonly group: Group;
  readonly subject: SubjectName;
  readonly label: string;
  readonly input: string;
  /** Runner topic name (or "out") to bench topic. */
  readonly outputs: Map<string, string>;
  readonly read: OutputTopic[];
  readonly specs: TopicSpec[];
}

function benchSpec(real: TopicName, name: string): TopicSpec {
  const spec = topicSpec(real);
  return { ...spec, name, retentionMs: 3_600_000, compacted: false, doc: `pipeline benchmark ${uid}: a copy of ${real}` };
}

function plan(group: Group, subject: SubjectName): Plan {
  const base = `bench.${uid}.${group.short}.${subject}`;
  const input = `${base}.in`;
  const real = group.kind.topic;
  const specs = [benchSpec(real, input)];
  const outputs = new Map<string, string>();
  const read: OutputTopic[] = [];
  const schema = group.kind.schema;
  if (subject === "passthrough" || subject === "passthrough-txn") {
    outputs.set("out", `${base}.out`);
    specs.push(benchSpec(real, `${base}.out`));
    read.push({ topic: `${base}.out`, read: "id", schema });
  } else if (subject === "runner-identity") {
    outputs.set(real, `${base}.out`);
    specs.push(benchSpec(real, `${base}.out`));
    read.push({ topic: `${base}.out`, read: "id", schema });
  } else {
    for (const o of group.processor.outputs) {
      const name = `${base}.${o.replace(/^oz0\./, "")}`;
      outputs.set(o, name);
      specs.push(benchSpec(o, name));
      const out = topicSpec(o);
      // The answer topic names its input by input_id; the trace has no input ID, so it is not read.
      if (out.schema === "Decision" || out.schema === "ResultDelivered") read.push({ topic: name, read: "input_id", schema: out.schema });
    }
  }
  if (subject === "runner-identity" || subject === "processor") {
    const dl = `${base}.dead-letter`;
    outputs.set(DEAD_LETTER_TOPIC, dl);
    specs.push(benchSpec(DEAD_LETTER_TOPIC, dl));
    read.push({ topic: dl, read: "dead_letter", schema: "DeadLetter" });
  }
  const label = subject === "processor" ? group.processor.name : subject;
  return { group, subject, label, input, outputs, read, specs };
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

interface Row {
  readonly plan: Plan;
  readonly events: number;
  readonly answered: number;
  readonly seconds: number;
  readonly perSecond: number;
  readonly complete: boolean;
  readonly p50: number;
  readonly p99: number;
  readonly latencySamples: number;
  readonly latencyMissing: number;
  readonly outputs: number;
  readonly deadLetters: number;
  readonly txnRetries: number;
  /** CPU spent over the throughput window. */
  readonly cpu: CpuSpent;
}

async function startSubject(p: Plan, ctx: SubjectContext): Promise<RunningSubject> {
  switch (p.subject) {
    case "passthrough":
      return startPassthrough(ctx);
    case "passthrough-txn":
      return startTransactionalPassthrough(ctx);
    case "runner-identity":
      return startUnderRunner(ctx, identityProcessor(p.group.kind.topic), undefined);
    case "processor":
      return startUnderRunner(ctx, p.group.processor, p.group.env());
  }
}

const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
const plans: Plan[] = groups.flatMap((g) => SUBJECTS.map((s) => plan(g, s)));
const rows: Row[] = [];
const started = Date.now();

async function produceAll(topic: string, messages: ReadonlyArray<{ key: string; value: Buffer }>): Promise<void> {
  let chunk: Array<{ key: string; value: Buffer }> = [];
  let bytes = 0;
  for (const m of messages) {
    chunk.push(m);
    bytes += m.value.length;
    if (chunk.length >= 500 || bytes > 512 * 1024) {
      await producer.send({ topic, messages: chunk });
      chunk = [];
      bytes = 0;
    }
  }
  if (chunk.length > 0) await producer.send({ topic, messages: chunk });
}

/** What the throughput run needs of the backlog once it is produced: the IDs answers name. */
interface Backlog {
  readonly size: number;
  readonly answered: readonly string[];
}

async function measure(p: Plan, backlog: Backlog, paced: ReadonlyArray<BenchEvent<{ id: string; ts: number }>>): Promise<Row> {
  const retriesBefore = txnRetries;
  const collector = new ThreadedCollector(`oz0-bench-reader-${uid}`, endpoints);
  await collector.start(p.read, p.group.kind.schema);
  const groupId = `bench.${uid}.${p.group.short}.${p.subject}`;
  const meter = new CpuMeter(redis);
  await meter.start();
  const subject = await startSubject(p, { kafka, serde, log, groupId, input: p.input, outputs: p.outputs });
  try {
    // Throughput: the backlog, from the first batch to the last answer read.
    const want = backlog.answered;
    const drained = await collector.waitFor(want, SECONDS * 1000);
    const t0 = subject.firstBatchAt() ?? Date.now();
    const end = drained.last ?? Date.now();
    const seconds = Math.max(0.001, (end - t0) / 1000);
    const complete = drained.missing === 0;
    await meter.stop();
    const cpu = meter.between(t0, end);
    // Latency: events sent one by one at RATE a second, each stamped when sent.
    const sentAt = new Map<string, number>();
    const sends: Array<Promise<unknown>> = [];
    const pacedStart = Date.now();
    for (let i = 0; i < paced.length; i++) {
      const e = paced[i];
      if (!e) continue;
      const due = pacedStart + (i * 1000) / RATE;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      const now = Date.now();
      const value = { ...e.value, ts: now };
      if (e.answered) sentAt.set(value.id, now);
      sends.push(producer.send({ topic: p.input, messages: [{ key: e.key, value: serde.encode(p.group.kind.schema, value) }] }));
    }
    await Promise.all(sends);
    const answered = await collector.waitFor([...sentAt.keys()], 20_000);
    const latencies = [...sentAt].flatMap(([id, at]) => {
      const read = answered.seen.get(id);
      return read === undefined ? [] : [read - at];
    });
    latencies.sort((a, b) => a - b);
    // Answers of the backlog read by now, late ones included, when it did not drain in time.
    const done = complete ? want.length : (await collector.waitFor(want, 0)).seen.size;
    const share = done / Math.max(1, want.length);
    return {
      plan: p,
      events: complete ? backlog.size : Math.round(backlog.size * share),
      answered: done,
      seconds,
      perSecond: (complete ? backlog.size : backlog.size * share) / seconds,
      complete,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      latencySamples: latencies.length,
      latencyMissing: answered.missing,
      outputs: answered.outputs,
      deadLetters: answered.deadLetters,
      txnRetries: txnRetries - retriesBefore,
      cpu,
    };
  } finally {
    await subject.stop().catch((err: unknown) => log.warn("stopping a subject failed", { subject: p.label, error: String(err) }));
    await collector.stop().catch(() => undefined);
    await meter.stop();
  }
}

function fmt(n: number, digits = 0): string {
  return Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "-";
}

/** CPU seconds over the window as microseconds per input handled in it; null when not known. */
function perInput(r: Row | undefined, seconds: (cpu: CpuSpent) => number | null): number | null {
  const s = r ? seconds(r.cpu) : null;
  return r === undefined || s === null || r.events === 0 ? null : (s * 1e6) / r.events;
}

const machineCpu = (cpu: CpuSpent): number | null => cpu.machine;
const processCpu = (cpu: CpuSpent): number | null => cpu.process;
const redisCpu = (cpu: CpuSpent): number | null => cpu.redis;

function table(): string {
  const lines = [
    "| input | subject | events | answers | seconds | events/s | vs passthrough | vs passthrough-txn | p50 ms | p99 ms | dead letters | txn retries | CPU µs/input: machine | this process | Redis |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const r of rows) {
    const same = rows.filter((o) => o.plan.group === r.plan.group);
    const base = same.find((o) => o.plan.subject === "passthrough")?.perSecond ?? NaN;
    const txn = same.find((o) => o.plan.subject === "passthrough-txn")?.perSecond ?? NaN;
    const note = r.complete ? "" : " (timed out)";
    lines.push(
      `| ${r.plan.group.kind.topic} | ${r.plan.label}${note} | ${r.events} | ${r.answered} | ${fmt(r.seconds, 2)} | ${fmt(r.perSecond)} | ${fmt(r.perSecond / base, 2)} | ${fmt(r.perSecond / txn, 2)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${r.deadLetters} | ${r.txnRetries} | ${fmt(perInput(r, machineCpu) ?? NaN)} | ${fmt(perInput(r, processCpu) ?? NaN)} | ${fmt(perInput(r, redisCpu) ?? NaN)} |`,
    );
  }
  return lines.join("\n");
}

function verdicts(): string[] {
  return groups.map((g) => {
    const same = rows.filter((o) => o.plan.group === g);
    const base = same.find((o) => o.plan.subject === "passthrough");
    const proc = same.find((o) => o.plan.subject === "processor");
    if (!base || !proc) return `- ${g.processor.name}: not measured`;
    const ratio = proc.perSecond / base.perSecond;
    const meets = proc.complete && ratio >= 0.5;
    const identity = same.find((o) => o.plan.subject === "runner-identity");
    const [cBase, cProc, cId, cRedis] = [perInput(base, machineCpu), perInput(proc, machineCpu), perInput(identity, machineCpu), perInput(proc, redisCpu)];
    // What comes before the processor's own work: the runner with a core that does nothing, and the Redis server's share.
    const floor = cBase !== null && cId !== null && cRedis !== null ? `, with this processor's Redis server time ${fmt(cId + cRedis)} µs (${fmt((cId + cRedis) / cBase, 2)}x) before its own work` : "";
    const cpu =
      cBase !== null && cProc !== null
        ? ` Machine CPU per input: ${fmt(cProc)} µs against the passthrough's ${fmt(cBase)} µs (${fmt(cProc / cBase, 2)}x; half the throughput allows 2x on busy cores)${cId !== null ? `; runner-identity's ${fmt(cId)} µs (${fmt(cId / cBase, 2)}x)${floor}` : ""}.`
        : "";
    return `- ${g.processor.name}: ${fmt(proc.perSecond)} inputs/s (${proc.answered} ${g.answers}) against ${fmt(base.perSecond)}/s for the bare passthrough: ${fmt(ratio, 2)}x, ${meets ? "meets" : "misses"} the aim of at least half the passthrough's throughput.${cpu}`;
  });
}

async function cleanup(): Promise<void> {
  const topics = plans.flatMap((p) => p.specs.map((s) => s.name));
  await admin.deleteTopics({ topics, timeout: 30_000 }).catch((err: unknown) => say(`deleting the bench topics failed (${String(err)}); delete bench.${uid}.* by hand`));
  let removed = 0;
  for await (const batch of scanKeys(redis, `${keys.prefix}:*`, 500)) {
    if (batch.length > 0) removed += await deleteKeys(redis, batch);
  }
  say(`cleaned up: ${topics.length} topics, ${removed} Redis keys under ${keys.prefix}:`);
}

let interrupted = false;
process.once("SIGINT", () => {
  interrupted = true;
  say("interrupted: finishing the subject in hand, then cleaning up");
});

try {
  await admin.connect();
  await serde.registerAll();
  const specs = plans.flatMap((p) => p.specs);
  say(`bench ${uid}: creating ${specs.length} topics`);
  await ensureTopics(admin, specs);
  // The copies keep the real topics' configs (maxMessageBytes of results-delivered and
  // dead-letter included), so the bench meets the limits the pipeline meets.
  await producer.connect();
  const paced = Math.max(1, Math.round(RATE * LATENCY_SECONDS));
  // Each group's backlog is made once and produced to each subject's input; then only its IDs
  // are kept, so the events' objects do not sit in this process's heap while subjects run.
  const made = new Map<Group, Backlog>();
  for (const g of groups) {
    const events = g.kind.make(g.count, `${uid}-b`, 1);
    for (const p of plans.filter((q) => q.group === g)) {
      const t = Date.now();
      await produceAll(p.input, events.map((e) => ({ key: e.key, value: serde.encode(p.group.kind.schema, e.value) })));
      say(`pre-produced ${events.length} ${p.group.kind.schema} to ${p.input} in ${Date.now() - t} ms`);
    }
    made.set(g, { size: events.length, answered: events.filter((e) => e.answered).map((e) => e.value.id) });
  }
  for (const p of plans) {
    if (interrupted) break;
    const m = made.get(p.group);
    if (!m) continue;
    // The paced events carry the subject's own tag, so a processor's Redis state never sees one twice.
    const pacedEvents = p.group.kind.make(paced, `${uid}-l-${p.subject}`, 2);
    const t = Date.now();
    const row = await measure(p, m, pacedEvents);
    rows.push(row);
    say(`${p.group.kind.topic} ${p.label}: ${fmt(row.perSecond)} events/s over ${fmt(row.seconds, 2)} s${row.complete ? "" : " (timed out)"}, p50 ${fmt(row.p50)} ms, p99 ${fmt(row.p99)} ms (${row.latencySamples} samples, ${row.latencyMissing} missing), ${row.outputs} outputs, ${row.deadLetters} dead letters, ${row.txnRetries} txn retries; ${((Date.now() - t) / 1000).toFixed(1)} s in all`);
  }
} finally {
  await producer.disconnect().catch(() => undefined);
  await cleanup().catch((err: unknown) => say(`cleanup failed: ${String(err)}`));
  await admin.disconnect().catch(() => undefined);
  redis.disconnect();
}

const report = [
  `# Pipeline benchmark (${new Date().toISOString()})`,
  "",
  `\`npx tsx bench/pipeline/run.ts --events ${N} --results ${RESULTS} --seconds ${SECONDS} --rate ${RATE} --latency-seconds ${LATENCY_SECONDS}\`, ${((Date.now() - started) / 1000).toFixed(0)} s in all, Node ${process.version}.`,
  "",
  "Throughput: N pre-produced inputs per subject, from its first batch to the last answer read by a",
  "read-committed consumer. Latency: events sent one at a time at the paced rate, from the send to",
  "the answer being readable. Ratios are to the bare passthrough and to the transactional passthrough",
  "of the same input in the same run. Txn retries: CONCURRENT_TRANSACTIONS answers kafkajs retried",
  "(a transaction begun before the previous commit finished), each costing a backoff of ~100 ms.",
  "CPU µs/input: CPU seconds over the throughput window per input, of the whole machine (every core",
  "and process: broker, Redis, this one), of this process (the subject and the bench's reader), and",
  "of the Redis server. With the cores busy, throughput is the cores over the machine's CPU per input.",
  "",
  table(),
  "",
  ...verdicts(),
  "",
].join("\n");
process.stdout.write(`${report}\n`);
const outFile = values.out === "" ? fileURLToPath(new URL("../out/pipeline.md", import.meta.url)) : values.out;
await mkdir(dirname(outFile), { recursive: true });
await writeFile(outFile, report);
process.exit(rows.length === plans.length && rows.every((r) => r.complete) ? 0 : 1);
