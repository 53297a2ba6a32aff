/**
 * Every topic of the pipeline, as data: name, what it carries and how it is keyed,
 * partitions, retention and compaction. `npm run topics` and the test setup create them
 * idempotently from this table.
 */
import type { SchemaName } from "../schemas/catalog.ts";

export interface TopicSpec {
  readonly name: string;
  /** The schema of its values. */
  readonly schema: SchemaName;
  /** What its key is; records of one key stay in order on one partition. */
  readonly key: "run_id" | "tree_id" | "kind/id" | "input" | "tenant";
  readonly partitions: number;
  /** Milliseconds, or -1 to keep forever. */
  readonly retentionMs: number;
  readonly compacted: boolean;
  /**
   * The largest record the topic takes, when its records can outgrow the broker's 1 MiB
   * default: what the model reads can be bigger than the result it came from, and a dead
   * letter carries a whole input besides its reason.
   */
  readonly maxMessageBytes?: number;
  readonly doc: string;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const MIB = 1024 * 1024;

export const TOPICS = [
  {
    name: "oz0.tool-calls.requested",
    schema: "ToolCall",
    key: "run_id",
    partitions: 8,
    retentionMs: 7 * DAY,
    compacted: false,
    doc: "Tool calls as runtimes publish them, before a missing budget is filled in (FIT-15).",
  },
  {
    name: "oz0.tool-calls",
    schema: "ToolCall",
    key: "run_id",
    partitions: 8,
    retentionMs: 7 * DAY,
    compacted: false,
    doc: "Tool calls with any budget filled in: what policy, the loop detector and people see.",
  },
  {
    name: "oz0.tool-results",
    schema: "ToolResult",
    key: "run_id",
    partitions: 8,
    retentionMs: 7 * DAY,
    compacted: false,
    doc: "Tool results as runtimes publish them (large ones by ref).",
  },
  {
    name: "oz0.tool-results.watched",
    schema: "ToolResult",
    key: "run_id",
    partitions: 8,
    retentionMs: 7 * DAY,
    compacted: false,
    doc: "Tool results after the loop detector saw them (loop-results), what fit-results fits: the one that crossed the no-progress line carries its words (LOOP-7).",
  },
  {
    name: "oz0.model-calls",
    schema: "ModelCall",
    key: "tree_id",
    partitions: 8,
    retentionMs: 7 * DAY,
    compacted: false,
    doc: "Asks before model calls, usage after them, prompt-cache re-warms.",
  },
  {
    name: "oz0.jobs",
    schema: "JobEvent",
    key: "tree_id",
    partitions: 8,
    retentionMs: 7 * DAY,
    compacted: false,
    doc: "Job and wait lifecycle, and asks before a child starts.",
  },
  {
    name: "oz0.call-decisions",
    schema: "Decision",
    key: "run_id",
    partitions: 8,
    retentionMs: 30 * DAY,
    compacted: false,
    doc: "Whether each tool call goes ahead, waits for a person, or stops the job.",
  },
  {
    name: "oz0.loop-approvals",
    schema: "Decision",
    key: "run_id",
    partitions: 8,
    retentionMs: 30 * DAY,
    compacted: false,
    doc: "Answers to loop approvals (LOOP-5): a person's approve (verdict allow) or deny (stop), or a passed deadline (stop), subject the approval ID.",
  },
  {
    name: "oz0.admissions",
    schema: "Decision",
    key: "tree_id",
    partitions: 8,
    retentionMs: 30 * DAY,
    compacted: false,
    doc: "Admissions and refusals of model calls and children.",
  },
  {
    name: "oz0.results-delivered",
    schema: "ResultDelivered",
    key: "run_id",
    partitions: 8,
    retentionMs: 7 * DAY,
    compacted: false,
    maxMessageBytes: 8 * MIB,
    doc: "What the model reads back from each tool call: as it was, or fitted to a budget with its fit note.",
  },
  {
    name: "oz0.trace",
    schema: "TraceEntry",
    key: "tree_id",
    partitions: 8,
    retentionMs: 30 * DAY,
    compacted: false,
    doc: "Trace entries of every job (fitted steps, offloads, findings), never content.",
  },
  {
    name: "oz0.audit",
    schema: "AuditEvent",
    key: "tenant",
    partitions: 4,
    retentionMs: 30 * DAY,
    compacted: false,
    doc: "Entries for the audit log (files handed, approvals, refusals, tenant changes, kill switches, loop counts); the audit sink keeps them append-only in MinIO.",
  },
  {
    name: "oz0.config",
    schema: "ConfigRecord",
    key: "kind/id",
    partitions: 1,
    retentionMs: -1,
    compacted: true,
    doc: "Agent definitions, plugin manifests and tenant settings, read by every processor as a table.",
  },
  {
    name: "oz0.dead-letter",
    schema: "DeadLetter",
    key: "input",
    partitions: 1,
    retentionMs: 30 * DAY,
    compacted: false,
    maxMessageBytes: 8 * MIB,
    doc: "Inputs a processor could not use, with the reason and the original bytes.",
  },
] as const satisfies readonly TopicSpec[];

export type TopicName = (typeof TOPICS)[number]["name"];

/** Specs by name: the runner looks a topic up several times for every output. */
const BY_NAME = new Map<string, TopicSpec>(TOPICS.map((t) => [t.name, t]));

export function topic(name: TopicName): TopicSpec {
  const spec = BY_NAME.get(name);
  if (!spec) throw new Error(`no topic named ${name}`);
  return spec;
}

/** Kafka topic configs for a spec. */
export function topicConfigs(spec: TopicSpec): Record<string, string> {
  return {
    "cleanup.policy": spec.compacted ? "compact" : "delete",
    "retention.ms": String(spec.retentionMs),
    ...(spec.compacted ? { "min.cleanable.dirty.ratio": "0.1", "segment.ms": String(HOUR) } : {}),
    ...(spec.maxMessageBytes ? { "max.message.bytes": String(spec.maxMessageBytes) } : {}),
  };
}
