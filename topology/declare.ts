/**
 * A topology declared as data and checked once, with no I/O: its applications (each one
 * consumer group, exactly-once or not, with its consumers and fetch settings), their
 * processors, the processors chained in process (`wiring.ts`) and the timers (punctuators)
 * that run beside them. `topology/pipeline.ts` declares the pipeline's; `topology/run.ts`
 * runs what it declares, and `describe()` gives it as text (as Kafka Streams'
 * `TopologyDescription` does).
 *
 * Checked when declared: names are unique, every topic is declared in `topics`, no processor
 * writes its own input, a topic read in process has one writer in its application, chains
 * have no cycle, and a chained topic is co-partitioned with the topic its chain consumes (same
 * partition count, same key): a chained input keeps the partition of the input it answers.
 */
import { TopologyError } from "../processors/runner/processor.ts";
import type { TopicSpec } from "./topics.ts";
import { wiringOf, type Wiring } from "./wiring.ts";

type Env = Record<string, string | undefined>;

/** What the topology needs to know of a processor: its name and topics. */
export interface ProcessorShape {
  readonly name: string;
  readonly input: string;
  readonly outputs: readonly string[];
}

/** A processor in an application, with whatever else its node carries (its environment). */
export interface NodeShape {
  readonly processor: ProcessorShape;
  /** What state the processor keeps, in a few words (the docs' table). */
  readonly state?: string;
}

/** A setting of an application read from the environment, with its text for `describe()`. */
export interface Setting<T> {
  readonly text: string;
  fromEnv(env: Env): T;
}

/** A timer run beside an application's processors (Kafka Streams' punctuator). */
export interface PunctuatorShape {
  readonly name: string;
  /** How often it fires, as text. */
  readonly every: string;
  /** The topics it publishes to. */
  readonly writes: readonly string[];
  readonly doc: string;
}

export interface ApplicationSpec<N extends NodeShape, P extends PunctuatorShape> {
  /** Its consumer group is the pipeline's prefix and this name (`oz0.pipeline`). */
  readonly name: string;
  readonly doc: string;
  /** Outputs and offsets in one transaction, or sent then committed. */
  readonly exactlyOnce: boolean;
  readonly consumers: Setting<number>;
  /** A fetch waits for `minBytes` or `maxWaitMs`; left out, the transport's defaults. */
  readonly fetch?: Setting<{ minBytes: number; maxWaitMs: number }>;
  /**
   * For an application whose outputs no runtime awaits: at most `atOnce` of its batches in
   * hand at once, each started on an event-loop turn of its own and at least `gapMs` after the
   * one before, a burst of them spread over up to `spreadMs` (`processors/runner/turns.ts`), so
   * that its bursts do not hold up the batches whose outputs are answers. Left out, its batches
   * are handled as they come.
   */
  readonly yields?: Setting<{ readonly atOnce: number; readonly gapMs: number; readonly spreadMs?: number }>;
  readonly processors: readonly N[];
  readonly punctuators?: readonly P[];
}

/** One processor reading, in process, what another of its application writes. */
export interface ChainedEdge {
  readonly application: string;
  readonly from: string;
  readonly to: string;
  readonly topic: string;
}

export interface DeclaredApplication<N extends NodeShape, P extends PunctuatorShape> extends ApplicationSpec<N, P> {
  readonly punctuators: readonly P[];
  readonly wiring: Wiring;
  /** The topics the application consumes from Kafka, in the order first named. */
  readonly topics: readonly string[];
}

export interface Topology<N extends NodeShape, P extends PunctuatorShape> {
  readonly applications: ReadonlyArray<DeclaredApplication<N, P>>;
  /** Every processor's node, application by application, in declared order. */
  readonly nodes: readonly N[];
  readonly edges: readonly ChainedEdge[];
  /** The node of the processor of that name; throws when none is declared. */
  node(name: string): N;
  /** The application a processor runs in. */
  applicationOf(name: string): DeclaredApplication<N, P>;
  application(name: string): DeclaredApplication<N, P>;
  /** Where each processor reads: its group, and the topic its inputs are consumed from. */
  layout(prefix?: string): Array<{ readonly name: string; readonly group: string; readonly consumes: string }>;
  /** The whole topology as text. */
  describe(prefix?: string): string;
}

function unique(kind: string, names: readonly string[]): void {
  const seen = new Set<string>();
  for (const n of names) {
    if (seen.has(n)) throw new TopologyError(`two ${kind}s are named ${n}`);
    seen.add(n);
  }
}

/** Declares and checks a topology over these topics (`topology/topics.ts`'s `TOPICS`). */
export function declareTopology<N extends NodeShape, P extends PunctuatorShape>(specs: ReadonlyArray<ApplicationSpec<N, P>>, topics: readonly TopicSpec[]): Topology<N, P> {
  const byName = new Map(topics.map((t) => [t.name, t]));
  const spec = (name: string, by: string): TopicSpec => {
    const t = byName.get(name);
    if (!t) throw new TopologyError(`${by} names topic ${name}, which topology/topics.ts does not declare`);
    return t;
  };
  unique("application", specs.map((a) => a.name));
  unique("processor", specs.flatMap((a) => a.processors.map((n) => n.processor.name)));
  unique("punctuator", specs.flatMap((a) => (a.punctuators ?? []).map((p) => p.name)));
  const edges: ChainedEdge[] = [];
  const applications = specs.map((a): DeclaredApplication<N, P> => {
    for (const { processor: p } of a.processors) {
      for (const t of [p.input, ...p.outputs]) spec(t, `processor ${p.name}`);
      if (p.outputs.includes(p.input)) throw new TopologyError(`processor ${p.name} writes to its own input ${p.input}`);
    }
    for (const t of a.punctuators ?? []) for (const w of t.writes) spec(w, `punctuator ${t.name}`);
    // One writer a topic read in process, and no cycle (wiringOf throws TopologyError).
    const wiring = wiringOf(a.processors);
    for (const [w, readers] of wiring.chained) {
      const writer = (a.processors[w] as N).processor;
      for (const r of readers) {
        const reader = (a.processors[r.member] as N).processor;
        const chainedTopic = spec(r.topic, `processor ${reader.name}`);
        const consumed = spec(wiring.consumes[r.member] as string, `processor ${reader.name}`);
        if (chainedTopic.partitions !== consumed.partitions || chainedTopic.key !== consumed.key) {
          throw new TopologyError(
            `${reader.name} is chained after ${writer.name} on ${chainedTopic.name} (${chainedTopic.partitions} partitions, key ${chainedTopic.key}), which is not co-partitioned with ${consumed.name} (${consumed.partitions} partitions, key ${consumed.key}), the topic the chain consumes`,
          );
        }
        edges.push({ application: a.name, from: writer.name, to: reader.name, topic: r.topic });
      }
    }
    return { ...a, punctuators: a.punctuators ?? [], wiring, topics: wiring.topics };
  });
  const nodes = applications.flatMap((a) => a.processors);
  const node = (name: string): N => {
    const n = nodes.find((x) => x.processor.name === name);
    if (!n) throw new TopologyError(`the topology declares no processor named ${name}`);
    return n;
  };
  const applicationOf = (name: string): DeclaredApplication<N, P> => {
    const a = applications.find((x) => x.processors.some((n) => n.processor.name === name));
    if (!a) throw new TopologyError(`the topology declares no processor named ${name}`);
    return a;
  };
  const application = (name: string): DeclaredApplication<N, P> => {
    const a = applications.find((x) => x.name === name);
    if (!a) throw new TopologyError(`the topology declares no application named ${name}`);
    return a;
  };
  const layout = (prefix = "oz0.") =>
    applications.flatMap((a) => a.processors.map((n, i) => ({ name: n.processor.name, group: `${prefix}${a.name}`, consumes: a.wiring.consumes[i] as string })));
  const describe = (prefix = "oz0."): string => {
    const lines: string[] = [`Topology: ${applications.length} applications, ${nodes.length} processors, ${edges.length} chained, ${applications.reduce((s, a) => s + a.punctuators.length, 0)} punctuators`];
    for (const a of applications) {
      const fetch = a.fetch ? `, fetch ${a.fetch.text}` : "";
      lines.push("", `Application ${a.name}: group ${prefix}${a.name}, ${a.exactlyOnce ? "exactly-once" : "at-least-once, idempotent effects"}, consumers ${a.consumers.text}${fetch}${a.yields ? `, yielding (${a.yields.text})` : ""}`);
      const chainedOf = (i: number): number[] => (a.wiring.chained.get(i) ?? []).map((c) => c.member);
      const walk = (i: number, depth: number, via: string | null): void => {
        const p = (a.processors[i] as N).processor;
        const pad = "  ".repeat(depth);
        lines.push(`${pad}${via ? `chained on ${via}: ` : ""}Processor ${p.name} -> ${p.outputs.length > 0 ? p.outputs.join(", ") : "(none)"}`);
        for (const c of chainedOf(i)) walk(c, depth + 1, (a.processors[c] as N).processor.input);
      };
      for (const t of a.topics) {
        const s = byName.get(t) as TopicSpec;
        lines.push(`  Source ${t} (${s.partitions} partitions, key ${s.key})`);
        a.processors.forEach((n, i) => {
          if (n.processor.input === t) walk(i, 2, null);
        });
      }
      for (const p of a.punctuators) lines.push(`  Punctuator ${p.name} (every ${p.every}) -> ${p.writes.join(", ")}`);
    }
    return lines.join("\n") + "\n";
  };
  return { applications, nodes, edges, node, applicationOf, application, layout, describe };
}
