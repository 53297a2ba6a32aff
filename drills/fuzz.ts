/**
 * The bad-input drill (SYS-1): hostile messages, deterministic by seed, produced into a lab's
 * input topic while the lab's processor runs as a worker process. Every one must end in the
 * dead-letter topic with a reason that names what is wrong and what to do (or, for a ref of
 * another tenant, in its documented answer); the worker must never exit; its memory must stay
 * bounded. docs/reliability.md ("Bad input") describes the kinds and the choices.
 */
import { setTimeout as sleep } from "node:timers/promises";
import kafkajs from "kafkajs";
import type { Producer } from "kafkajs";
import { random } from "../client/synthetic.ts";
import { schema, type SchemaName } from "../schemas/catalog.ts";
import type { DeadLetter, Decision } from "../schemas/types.ts";
import { chunks } from "../processors/runner/transport.ts";
import { workerEnv } from "./disrupt.ts";
import { duplicates, openLab, OutputReader, producerOf, Worker, type Services } from "./lab.ts";
import type { DrillRow } from "./report.ts";
import { drillSubject, type DrillSubject } from "./subjects.ts";

export const FUZZ_SUBJECTS = ["loop-calls", "limits-model-calls", "fit-results"] as const;
export type FuzzSubject = (typeof FUZZ_SUBJECTS)[number];

export const FUZZ_KINDS = [
  "random-bytes",
  "empty-value",
  "null-value",
  "wrong-magic-byte",
  "unknown-schema-id",
  "other-schema-id",
  "truncated-body",
  "empty-id",
  "negative-count",
  "invalid-utf8",
  "arguments-not-object",
  "arguments-10mb",
  "arguments-deep",
  "other-tenant-ref",
] as const;
export type FuzzKind = (typeof FUZZ_KINDS)[number];

/** The peak RSS above which the drill fails: generous, as the worker holds whole batches. */
export const RSS_BOUND_BYTES = 1.5 * 1024 ** 3;

/** Unknown schema IDs are drawn from this many (a producer pointed at another registry reuses its few). */
const UNKNOWN_IDS = 50;

const MIB = 1024 * 1024;

/** One hostile message and what must become of it. */
export interface Hostile {
  readonly kind: FuzzKind;
  readonly key: string;
  readonly value: Buffer | null;
  /** Sent gzip-compressed, alone: the broker takes a 10 MB value only compressed. */
  readonly gzip: boolean;
  /** A dead letter whose reason matches, or an answer (not a dead letter) for the input. */
  readonly expect: { readonly deadLetter: RegExp } | { readonly answer: (v: Record<string, unknown>) => boolean; readonly documented: string };
}

/** The kinds each subject gets: the wire-level ones all, the value-level ones where its schema has the field. */
export function kindsOf(subject: FuzzSubject): FuzzKind[] {
  const wire: FuzzKind[] = ["random-bytes", "empty-value", "null-value", "wrong-magic-byte", "unknown-schema-id", "other-schema-id", "truncated-body", "empty-id", "invalid-utf8"];
  if (subject === "limits-model-calls") return [...wire, "negative-count"];
  if (subject === "fit-results") return [...wire, "negative-count", "arguments-not-object", "arguments-10mb", "arguments-deep", "other-tenant-ref"];
  return [...wire, "arguments-not-object", "arguments-10mb", "arguments-deep", "other-tenant-ref"];
}

/** How many of each kind among `total`: 10 MB arguments only a few, deep arguments at most 300, the rest evenly. */
export function kindCounts(subject: FuzzSubject, total: number): Map<FuzzKind, number> {
  const kinds = kindsOf(subject);
  const counts = new Map<FuzzKind, number>();
  const fixed = (k: FuzzKind, n: number): number => (kinds.includes(k) ? Math.min(n, Math.max(1, Math.floor(total / kinds.length))) : 0);
  const big = fixed("arguments-10mb", 3);
  const deep = fixed("arguments-deep", 300);
  if (big > 0) counts.set("arguments-10mb", big);
  if (deep > 0) counts.set("arguments-deep", deep);
  const rest = kinds.filter((k) => !counts.has(k));
  const left = Math.max(rest.length, total - big - deep);
  rest.forEach((k, i) => counts.set(k, Math.floor(left / rest.length) + (i < left % rest.length ? 1 : 0)));
  return counts;
}

const ID_FIELDS: Record<FuzzSubject, readonly string[]> = {
  "loop-calls": ["id", "tenant", "tree_id", "job_id", "run_id", "call_id", "plugin", "tool", "function"],
  "limits-model-calls": ["id", "tenant", "tree_id", "job_id", "run_id", "request_id", "model"],
  "fit-results": ["id", "tenant", "tree_id", "job_id", "run_id", "call_id"],
};
const TEXT_FIELDS: Record<FuzzSubject, readonly string[]> = {
  "loop-calls": ["tenant", "run_id", "call_id", "function", "arguments"],
  "limits-model-calls": ["tenant", "tree_id", "model", "request_id"],
  "fit-results": ["tenant", "call_id", "arguments", "content"],
};
const NEGATIVE_FIELDS: Partial<Record<FuzzSubject, readonly string[]>> = {
  "limits-model-calls": ["input_tokens", "cache_read_tokens", "cache_write_tokens", "max_output_tokens", "output_tokens"],
  "fit-results": ["size_bytes"],
};

const PLACEHOLDER = "ZQXJ-utf8-ZQXJ";
/** Bad sequences: a lead byte without its continuation, bytes UTF-8 never uses, an overlong form. */
const BAD_UTF8 = [Buffer.from([0xc3, 0x28]), Buffer.from([0xff]), Buffer.from([0xfe, 0xfe]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xed, 0xa0, 0x80])];
const NOT_OBJECTS = ["[1,2,3]", "42", '"text"', "null", "true", "{not json", "", "{\"a\":1} trailing", "[]"];

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** What each kind's reason must say: the problem, and what to do about it. */
function reasonFor(kind: FuzzKind, schemaName: SchemaName, detail = ""): RegExp {
  switch (kind) {
    case "random-bytes":
    case "wrong-magic-byte":
      return new RegExp(`^not in the Confluent wire format \\(magic byte \\d+, expected 0\\): publish ${schemaName} events Avro-encoded through the schema registry`);
    case "empty-value":
    case "null-value":
      return new RegExp(`^empty message \\(no value\\): publish ${schemaName} events Avro-encoded`);
    case "unknown-schema-id":
      return /^schema ID \d+ is not in the registry at .*: the producer used another registry, or the message is corrupt; publish through the registry the pipeline reads/;
    case "other-schema-id":
      return new RegExp(`^schema ID \\d+ \\(oz0\\.Decision\\) cannot be read as ${schemaName} \\(.+\\): publish only ${schemaName} events`);
    case "truncated-body":
      return new RegExp(`^the Avro body does not decode with schema ID \\d+ as ${schemaName} \\(.+\\): the message is cut or corrupt; publish the event again`);
    case "empty-id":
      return new RegExp(`(^|; )${escape(detail)} is empty: the runtime must set it on every event`);
    case "negative-count":
      return new RegExp(`(^|; )${escape(detail)} is -\\d+: (it counts tokens, so it cannot be negative|a size cannot be negative)`);
    case "invalid-utf8":
      return new RegExp(`^the string field ${escape(detail)} of this ${schemaName} \\(schema ID \\d+\\) is not valid UTF-8: Avro strings are UTF-8; encode the text as UTF-8`);
    case "arguments-not-object":
      return /^arguments (must be a JSON object: publish the call's arguments as one|are not JSON \(.+\): publish the call's arguments as a JSON object)/;
    case "arguments-10mb":
      return /^arguments are \d+ bytes, above the limit of 524288 \(512 KiB\): store large data as a file and pass its ref in the arguments The input's value was \d+ bytes \(SHA-256 [0-9a-f]{64}\): this dead letter keeps its first 1048576; the whole input stays at \S+ partition \d+ offset \d+/;
    case "arguments-deep":
      return /^arguments nest objects and arrays more than 64 levels deep: flatten them, or store the data as a file and pass its ref/;
    case "other-tenant-ref":
      // The same words as for a ref never stored: nothing tells that another tenant holds it.
      return /^content_ref oz0-file:sha256:[0-9a-f]{64} is not a file of tree \S+ of tenant (?!fuzz-other)\S+: store the result before publishing its ref$/;
  }
}

/** A value encoded, then a placeholder's bytes overwritten with invalid UTF-8 of the same length. */
function withBadUtf8(encoded: Buffer, rnd: () => number): Buffer {
  const at = encoded.indexOf(PLACEHOLDER);
  if (at < 0) throw new Error("the placeholder is not in the encoded value");
  const out = Buffer.from(encoded);
  const bad = BAD_UTF8[Math.floor(rnd() * BAD_UTF8.length)] as Buffer;
  for (let i = 0; i < PLACEHOLDER.length; i++) out[at + i] = i < bad.length ? (bad[i] as number) : 0x41 + (i % 26);
  return out;
}

function deepJson(levels: number, asObjects: boolean): string {
  // Five bytes a level at most, so 100,000 levels stay under the size limit and meet the depth one.
  return asObjects ? `{"":${'{"":'.repeat(levels - 1)}1${"}".repeat(levels)}` : `{"a":${"[".repeat(levels - 1)}${"]".repeat(levels - 1)}}`;
}

/**
 * The hostile messages for one subject, deterministic by seed: `total` of them, kinds
 * interleaved. Values that must be valid Avro start from the benchmark's valid events.
 */
export function hostileInputs(s: Services, subject: DrillSubject & { name: FuzzSubject }, total: number, seed: number, tag: string): Hostile[] {
  const rnd = random(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rnd() * list.length)] as T;
  const name = subject.kind.schema;
  const counts = kindCounts(subject.name, total);
  const bases = subject.kind.make(Math.min(total, 2_000), `fz-${tag}`, seed);
  const decision = schema("Decision").type;
  const out: Hostile[] = [];
  let n = 0;
  for (const [kind, count] of counts) {
    for (let i = 0; i < count; i++) {
      const key = `${kind}.${tag}.${n++}`;
      const base = { ...(bases[Math.floor(rnd() * bases.length)]?.value as Record<string, unknown>), id: key };
      const valid = (): Buffer => s.serde.encode(name, base);
      const dead = (detail?: string): Hostile["expect"] => ({ deadLetter: reasonFor(kind, name, detail) });
      let value: Buffer | null;
      let expect = dead();
      let gzip = false;
      switch (kind) {
        case "random-bytes": {
          value = Buffer.from(Array.from({ length: 1 + Math.floor(rnd() * 2_048) }, () => Math.floor(rnd() * 256)));
          value[0] = 1 + Math.floor(rnd() * 255);
          break;
        }
        case "empty-value":
          value = Buffer.alloc(0);
          break;
        case "null-value":
          value = null;
          break;
        case "wrong-magic-byte":
          value = valid();
          value[0] = 1 + Math.floor(rnd() * 255);
          break;
        case "unknown-schema-id":
          value = valid();
          value.writeUInt32BE(0x7000_0000 + Math.floor(rnd() * UNKNOWN_IDS), 1);
          break;
        case "other-schema-id":
          value = s.serde.encode("Decision", { ...(decision.random() as unknown as Decision), input_id: key });
          break;
        case "truncated-body": {
          const whole = valid();
          value = whole.subarray(0, 5 + Math.floor(rnd() * (whole.length - 5)));
          break;
        }
        case "empty-id": {
          const field = pick(ID_FIELDS[subject.name]);
          value = s.serde.encode(name, { ...base, [field]: "" });
          expect = dead(field);
          break;
        }
        case "negative-count": {
          const field = pick(NEGATIVE_FIELDS[subject.name] ?? []);
          value = s.serde.encode(name, { ...base, [field]: -1 - Math.floor(rnd() * 1e9) });
          expect = dead(field);
          break;
        }
        case "invalid-utf8": {
          const field = pick(TEXT_FIELDS[subject.name]);
          value = withBadUtf8(s.serde.encode(name, { ...base, [field]: PLACEHOLDER }), rnd);
          expect = dead(field);
          break;
        }
        case "arguments-not-object":
          value = s.serde.encode(name, { ...base, arguments: pick(NOT_OBJECTS) });
          break;
        case "arguments-10mb":
          value = s.serde.encode(name, { ...base, arguments: JSON.stringify({ data: "x".repeat(10 * 1000 * 1000) }) });
          gzip = true;
          break;
        case "arguments-deep":
          value = s.serde.encode(name, { ...base, arguments: deepJson(i < 20 ? 100_000 : 65 + Math.floor(rnd() * 5_000), rnd() < 0.5) });
          break;
        case "other-tenant-ref": {
          const ref = `oz0-file:sha256:${Buffer.from(Array.from({ length: 32 }, () => Math.floor(rnd() * 256))).toString("hex")}`;
          if (subject.name === "fit-results") {
            value = s.serde.encode(name, { ...base, content: null, content_ref: ref, arguments: JSON.stringify({ tenant: "fuzz-other" }) });
          } else {
            // A model asking oz.read_result for a file another tenant stored: loop-calls lets the
            // call go (it judges repeats only); read-result answers "not found" (FILE-2, OFF-8).
            const run = `fuzz-${tag}-ref-${i}`;
            value = s.serde.encode(name, { ...base, run_id: run, tree_id: run, job_id: run, plugin: "oz", tool: "oz", function: "read_result", arguments: JSON.stringify({ ref, tenant: "fuzz-other" }) });
            expect = { answer: (v) => (v as unknown as Decision).verdict === "allow", documented: "allowed by loop-calls; read-result answers not found" };
          }
          break;
        }
      }
      out.push({ kind, key, value, gzip, expect });
    }
  }
  // Kinds interleaved, deterministically.
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j] as Hostile, out[i] as Hostile];
  }
  return out;
}

/** Sends at about `perSecond`, in sends under the broker's limit; compressed ones alone. */
async function send(producer: Producer, topic: string, messages: readonly Hostile[], perSecond: number): Promise<void> {
  const started = Date.now();
  let sent = 0;
  const plain = messages.filter((m) => !m.gzip);
  for (const m of messages.filter((x) => x.gzip)) {
    await producer.send({ topic, compression: kafkajs.CompressionTypes.GZIP, messages: [{ key: m.key, value: m.value }] });
  }
  const step = Math.max(1, Math.round(perSecond / 20));
  for (let i = 0; i < plain.length; i += step) {
    for (const part of chunks(plain.slice(i, i + step).map((m) => ({ topic, key: m.key, value: m.value })), 768 * 1024)) {
      await producer.send({ topic, messages: part.map((m) => ({ key: m.key, value: m.value })) });
    }
    sent = Math.min(plain.length, i + step);
    const wait = started + (sent * 1000) / perSecond - Date.now();
    if (wait > 0) await sleep(wait);
  }
}

export interface FuzzOptions {
  readonly subject: FuzzSubject;
  /** Hostile messages for this subject. */
  readonly messages: number;
  /** Messages sent per second. */
  readonly rate: number;
  readonly seed?: number;
  /** Longest wait with no new outcome before the missing ones count as lost. */
  readonly idleMs?: number;
  readonly say?: (line: string) => void;
}

export interface FuzzResult {
  readonly row: DrillRow;
  /** Per kind: sent, ended as expected. */
  readonly kinds: ReadonlyMap<FuzzKind, { sent: number; ok: number }>;
  /** Dead-letter reasons with numbers, IDs and digests taken out, and how often each came. */
  readonly reasons: ReadonlyMap<string, number>;
  /** Inputs that did not end as expected, a few of each kind, with what became of them. */
  readonly wrong: readonly string[];
}

/** A reason with its particulars taken out, so reasons of one kind group together. */
export function reasonGroup(reason: string): string {
  return reason
    .replace(/[0-9a-f]{64}/g, "<sha256>")
    .replace(/\b(fz|fuzz|bench)-[\w.-]+/g, "<id>")
    .replace(/\(Unexpected[^)]*\)|\((No number|Bad control|Expected|Unterminated)[^)]*\)/g, "(<JSON.parse message>)")
    .replace(/at \w+:\/\/\S+?(?=: )/g, "at <registry>")
    .replace(/\b(drill\.\S+|oz0\.[\w.-]+) partition \d+ offset \d+/g, "<topic> partition <p> offset <o>")
    .replace(/(?<![\w-])-?\d+(?!\w)/g, "N")
    .slice(0, 240);
}

export async function fuzzDrill(s: Services, o: FuzzOptions): Promise<FuzzResult> {
  const say = o.say ?? (() => {});
  const started = Date.now();
  const subject = (await drillSubject(o.subject)) as DrillSubject & { name: FuzzSubject };
  const tag = Date.now().toString(36);
  const hostile = hostileInputs(s, subject, o.messages, o.seed ?? 11, tag);
  const lab = await openLab(s, subject);
  const reader = new OutputReader(s.kafka, s.serde, lab);
  const producer = producerOf(s.kafka);
  // Only errors: a dead letter's warning per input would be 100,000 lines. An error line is a finding.
  const worker = new Worker(subject.name, lab.lab, { ...workerEnv(s, lab.lab), OZ0_LOG_LEVEL: "error" });
  let exits = 0;
  let stopping = false;
  void worker.exited.then(() => {
    if (!stopping) exits++;
  });
  let errorLines = 0;
  let rejoins = 0;
  const firstErrors: string[] = [];
  worker.child.stderr?.on("data", (chunk: Buffer) => {
    // Leaving the group as it is stopped may log a coordinator's complaint: not a finding.
    if (stopping) return;
    for (const line of chunk.toString("utf8").split("\n")) {
      if (!line.includes('"level":"error"')) continue;
      // The group dropped the member after a heartbeat came late (a loaded machine, a 6 s session):
      // kafkajs joins again and the uncommitted batch is handled again, exactly once. Counted, not failed.
      if (/not aware of this member/.test(line)) {
        rejoins++;
        continue;
      }
      errorLines++;
      if (firstErrors.length < 3) firstErrors.push(line.slice(0, 400));
    }
  });
  const seen = new Map<string, { dead: DeadLetter[]; answers: Array<Record<string, unknown>> }>();
  let read = 0;
  const take = (): void => {
    for (; read < reader.outputs.length; read++) {
      const out = reader.outputs[read];
      if (!out) continue;
      let key: string;
      if (out.deadLetter) {
        const dl = out.value as unknown as DeadLetter;
        key = dl.key ? dl.key.toString("utf8") : `${dl.topic}/${dl.partition}/${dl.offset}`;
      } else key = String(out.value.input_id);
      const entry = seen.get(key) ?? { dead: [], answers: [] };
      if (out.deadLetter) entry.dead.push(out.value as unknown as DeadLetter);
      else entry.answers.push(out.value);
      seen.set(key, entry);
    }
  };
  try {
    await reader.start();
    await producer.connect();
    await worker.ready;
    say(`${o.subject}: ${hostile.length} hostile messages at ${o.rate}/s into lab ${lab.lab}`);
    await send(producer, lab.input, hostile, o.rate);
    say(`${o.subject}: all sent after ${((Date.now() - started) / 1000).toFixed(0)} s; waiting for every outcome`);
    let last = -1;
    let lastChange = Date.now();
    for (;;) {
      take();
      const done = hostile.filter((h) => seen.has(h.key)).length;
      if (done === hostile.length) break;
      if (done !== last) {
        last = done;
        lastChange = Date.now();
      } else if (Date.now() - lastChange > (o.idleMs ?? 60_000)) break;
      await sleep(250);
    }
    // Late duplicates would come after the outcomes: give them a moment.
    await sleep(1_000);
    take();
  } finally {
    stopping = true;
    await worker.stop().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    await reader.stop().catch(() => undefined);
    await lab.close();
  }

  const kinds = new Map<FuzzKind, { sent: number; ok: number }>();
  const reasons = new Map<string, number>();
  const wrong: string[] = [];
  const wrongByKind = new Map<FuzzKind, number>();
  let lost = 0;
  let answered = 0;
  let deadLettered = 0;
  let otherTenant = 0;
  for (const h of hostile) {
    const k = kinds.get(h.kind) ?? { sent: 0, ok: 0 };
    k.sent++;
    kinds.set(h.kind, k);
    const got = seen.get(h.key);
    if (!got) {
      lost++;
      continue;
    }
    deadLettered += got.dead.length;
    answered += got.answers.length;
    for (const d of got.dead) reasons.set(reasonGroup(d.reason), (reasons.get(reasonGroup(d.reason)) ?? 0) + 1);
    let ok: boolean;
    let why = "";
    if ("deadLetter" in h.expect) {
      const d = got.dead[0];
      ok = got.dead.length === 1 && got.answers.length === 0 && d !== undefined && h.expect.deadLetter.test(d.reason);
      if (!ok) why = `${got.dead.length} dead letters (${got.dead.map((x) => x.reason.slice(0, 200)).join(" | ")}), ${got.answers.length} answers`;
    } else {
      ok = got.dead.length === 0 && got.answers.length > 0 && got.answers.every(h.expect.answer);
      if (!ok) why = `${got.dead.length} dead letters (${got.dead.map((x) => x.reason.slice(0, 200)).join(" | ")}), answers ${JSON.stringify(got.answers.map((a) => a.verdict ?? a.is_error))}`;
    }
    if (h.kind === "other-tenant-ref" && ok) otherTenant++;
    if (ok) k.ok++;
    else {
      const count = (wrongByKind.get(h.kind) ?? 0) + 1;
      wrongByKind.set(h.kind, count);
      if (count <= 3) wrong.push(`${h.kind} ${h.key}: ${why}`);
    }
  }
  const allAsExpected = [...kinds.values()].every((k) => k.ok === k.sent);
  const peakRss = worker.peakRss;
  const row: DrillRow = {
    drill: "fuzz (bad input)",
    subject: o.subject,
    inputs: hostile.length,
    answers: answered,
    lost,
    duplicated: duplicates(reader.outputs),
    deadLettered,
    peakRssMb: Math.round(peakRss / MIB),
    checks: {
      "each ended as documented, with its reason": allAsExpected,
      "worker never exited": exits === 0,
      "no error logged (but late-heartbeat rejoins)": errorLines === 0,
      "reader decoded every output": reader.undecodable === 0,
      [`peak RSS under ${RSS_BOUND_BYTES / MIB} MiB`]: peakRss > 0 && peakRss < RSS_BOUND_BYTES,
    },
    details: [
      `kinds: ${[...kinds].map(([kind, k]) => `${kind} ${k.ok}/${k.sent}`).join(", ")}`,
      ...(otherTenant > 0 ? [`other-tenant refs ended as documented: ${otherTenant}`] : []),
      ...(rejoins > 0 ? [`${rejoins} heartbeats or commits refused after the group dropped the worker for a late heartbeat (it joined again)`] : []),
      ...(errorLines > 0 ? [`${errorLines} error lines from the worker, the first: ${firstErrors.join(" / ")}`] : []),
      ...wrong,
    ],
    seconds: (Date.now() - started) / 1000,
    command: `npm run drill -- fuzz --subject ${o.subject} --messages ${o.messages} --rate ${o.rate}`,
  };
  return { row, kinds, reasons, wrong };
}

/** The kinds and reasons of fuzz runs, as Markdown (bench/out/fuzz.md). */
export function fuzzTables(results: readonly FuzzResult[]): string {
  const lines = ["| processor | kind | sent | ended as documented |", "| --- | --- | ---: | ---: |"];
  for (const r of results) for (const [kind, k] of r.kinds) lines.push(`| ${r.row.subject} | ${kind} | ${k.sent} | ${k.ok} |`);
  lines.push("", "| processor | dead-letter reason (particulars as N, <id>, <sha256>) | count |", "| --- | --- | ---: |");
  for (const r of results) {
    for (const [reason, n] of [...r.reasons].sort((a, b) => b[1] - a[1])) lines.push(`| ${r.row.subject} | ${reason.replace(/\|/g, "\\|")} | ${n} |`);
  }
  return lines.join("\n");
}
