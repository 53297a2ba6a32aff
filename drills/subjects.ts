/**
 * What a drill runs: a processor of the pipeline (by its name in `topology/pipeline.ts`), the inputs it is fed (the benchmark's
 * deterministic generators) and how its environment is built inside a lab. Labs keep each drill
 * apart from the live pipeline and from each other: topics `drill.<lab>.*` (copies of the real
 * ones' configs) and Redis keys under `drill_<lab>`.
 */
import type { RedisClient } from "../store/redis/client.ts";
import type { Processor } from "../processors/runner/processor.ts";
import type { FitEnv } from "../processors/fit-results/processor.ts";
import { limitsEnv } from "../processors/limits/index.ts";
import { RedisLoopStore, type LoopEnv } from "../processors/loops/index.ts";
import { staticConfig } from "../processors/runner/config-table.ts";
import { DEAD_LETTER_TOPIC } from "../processors/runner/runner.ts";
import type { SchemaName } from "../schemas/catalog.ts";
import type { ModelCall, ToolCall } from "../schemas/types.ts";
import type { FileStore } from "../store/files.ts";
import { Keys } from "../store/redis/keys.ts";
import { topic as topicSpec, type TopicName, type TopicSpec } from "../topology/topics.ts";
import { PIPELINE_TOPOLOGY } from "../topology/pipeline.ts";
import { BENCH_CONFIG_ROWS, loadCorpus, modelCalls, toolCalls, toolResults, type EventKind } from "../bench/pipeline/events.ts";

export const SUBJECT_NAMES = ["loop-calls", "limits-model-calls", "fit-results", "fit-offload"] as const;
export type SubjectName = (typeof SUBJECT_NAMES)[number];

export interface DrillSubject {
  readonly name: SubjectName;
  readonly processor: Processor<never, unknown>;
  readonly kind: EventKind<{ id: string; ts: number }>;
  /** `files`: the lab's own bucket, for a subject that offloads. */
  env(redis: RedisClient, keys: Keys, files: () => Promise<FileStore>): Promise<unknown>;
  /** Tenants whose files a lab of this subject stores (erased with the lab). */
  readonly tenants: readonly string[];
  /** The Redis key of the state an input's run or tree keeps (the plant drill writes over it); none for a subject without such state. */
  stateKey?(keys: Keys, input: unknown): string;
  /**
   * What else an input's run or tree writes that other runs share (a tenant's month of spend),
   * as the text its keys carry: an input that is dead-lettered leaves those short of its share.
   */
  sharedState?(input: unknown): readonly string[];
}

/** An offload threshold low enough that most of the corpus's results are stored in MinIO. */
export const OFFLOAD_DRILL_THRESHOLD = 400;

// FIT-8: the docs plugin's manifest too, so its results are fitted.
const config = staticConfig(BENCH_CONFIG_ROWS);

/** Results stay under the offload threshold here; offloads have drills of their own (MinIO down). */
const fitEnv: FitEnv = {
  load: () => Promise.resolve(null),
  threshold: () => 10_000,
  storeFile: () => Promise.reject(new Error("the drill's results stay under the offload threshold: nothing should be stored")),
  config,
};

export async function drillSubject(name: SubjectName): Promise<DrillSubject> {
  switch (name) {
    case "loop-calls":
      return {
        name,
        processor: PIPELINE_TOPOLOGY.node("loop-calls").processor,
        kind: toolCalls,
        env: (redis, keys) => Promise.resolve<LoopEnv>({ config, store: new RedisLoopStore(redis, keys) }),
        tenants: [],
        stateKey: (keys, input) => {
          const call = input as ToolCall;
          return keys.loopLane(call.tenant, call.run_id, "calls");
        },
      };
    case "limits-model-calls":
      return {
        name,
        processor: PIPELINE_TOPOLOGY.node("limits-model-calls").processor,
        kind: modelCalls,
        env: (redis, keys) => Promise.resolve(limitsEnv({ redis, config, keys })),
        tenants: [],
        stateKey: (keys, input) => {
          const ask = input as ModelCall;
          return keys.limits(ask.tenant, ask.tree_id);
        },
        sharedState: (input) => [`{tenant:${(input as ModelCall).tenant}}`],
      };
    case "fit-results":
      return { name, processor: PIPELINE_TOPOLOGY.node("fit-results").processor, kind: toolResults(await loadCorpus()), env: () => Promise.resolve(fitEnv), tenants: [] };
    case "fit-offload":
      return {
        name,
        processor: PIPELINE_TOPOLOGY.node("fit-results").processor,
        kind: toolResults(await loadCorpus()),
        env: async (_redis, _keys, files): Promise<FitEnv> => {
          const store = await files();
          return {
            load: () => Promise.resolve(null),
            threshold: () => OFFLOAD_DRILL_THRESHOLD,
            storeFile: (owner, bytes, options) => store.store(owner, bytes, options),
            config,
          };
        },
        tenants: ["tenant-0", "tenant-1", "tenant-2"],
      };
  }
}

export function isSubjectName(s: string): s is SubjectName {
  return (SUBJECT_NAMES as readonly string[]).includes(s);
}

/** The names of one lab: its topics (real name to the lab's copy) and its Redis key prefix. */
export interface LabNames {
  readonly lab: string;
  readonly groupId: string;
  readonly input: string;
  /** Real topic (as the runner emits it) to the lab's topic, outputs and dead letters included. */
  readonly topics: ReadonlyMap<string, string>;
  readonly specs: readonly TopicSpec[];
  readonly keys: Keys;
  /** The lab's MinIO bucket (used by subjects that offload). */
  readonly bucket: string;
  /** The lab's outputs the drill reads, with the schema of each. */
  readonly answers: ReadonlyArray<{ readonly topic: string; readonly schema: SchemaName; readonly deadLetters: boolean }>;
}

export function labNames(subject: DrillSubject, lab: string): LabNames {
  const base = `drill.${lab}`;
  const copy = (real: TopicName, name: string): TopicSpec => ({ ...topicSpec(real), name, retentionMs: 3_600_000, compacted: false, doc: `drill ${lab}: a copy of ${real}` });
  const topics = new Map<string, string>();
  const specs: TopicSpec[] = [];
  const answers: Array<{ topic: string; schema: SchemaName; deadLetters: boolean }> = [];
  const input = `${base}.in`;
  specs.push(copy(subject.processor.input, input));
  for (const o of subject.processor.outputs) {
    const name = `${base}.${o.replace(/^oz0\./, "")}`;
    topics.set(o, name);
    specs.push(copy(o, name));
    const schema = topicSpec(o).schema;
    if (schema === "Decision" || schema === "ResultDelivered") answers.push({ topic: name, schema, deadLetters: false });
  }
  const dl = `${base}.dead-letter`;
  topics.set(DEAD_LETTER_TOPIC, dl);
  specs.push(copy(DEAD_LETTER_TOPIC, dl));
  answers.push({ topic: dl, schema: "DeadLetter", deadLetters: true });
  return { lab, groupId: `${base}.${subject.name}`, input, topics, specs, keys: new Keys(`drill_${lab}`), bucket: `drill-${lab}`, answers };
}
