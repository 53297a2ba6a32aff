/**
 * How the processors of one application read (pure, no I/O): which topics it consumes from
 * Kafka, and which processors are chained in process after the writer of their input.
 * `runner.ts` runs it; `declare.ts` checks a whole topology with it.
 */
import { TopologyError } from "../processors/runner/processor.ts";

/**
 * How the members of an application read: each topic one of them writes is read in process by
 * the members that read it (chained after the writer: they decide the writer's outputs in the
 * same batch, and both commit together), and every other input is read from Kafka, once.
 */
export interface Wiring {
  /** The topics to consume, in the order first named. */
  readonly topics: string[];
  /** Each chained member's index, by the index of the member whose outputs it reads. */
  readonly chained: ReadonlyMap<number, Array<{ readonly member: number; readonly topic: string }>>;
  /** The topic each member's inputs come from: its own, or (chained) its writer's. */
  readonly consumes: string[];
}

export function wiringOf(members: ReadonlyArray<{ readonly processor: { readonly name: string; readonly input: string; readonly outputs: readonly string[] } }>): Wiring {
  const writing = new Map<string, number[]>();
  members.forEach((m, i) => {
    for (const t of m.processor.outputs) writing.set(t, [...(writing.get(t) ?? []), i]);
  });
  // A topic read in process has one writer in the application; topics only written may have many.
  const writers = new Map<string, number>();
  for (const m of members) {
    const w = writing.get(m.processor.input);
    if (w === undefined) continue;
    if (w.length > 1) throw new TopologyError(`${m.processor.name} reads ${m.processor.input}, which ${w.map((i) => members[i]?.processor.name).join(" and ")} write: a topic read in process has one writer in the application`);
    writers.set(m.processor.input, w[0] as number);
  }
  const chained = new Map<number, Array<{ member: number; topic: string }>>();
  members.forEach((m, i) => {
    const w = writers.get(m.processor.input);
    if (w === undefined) return;
    const list = chained.get(w) ?? [];
    list.push({ member: i, topic: m.processor.input });
    chained.set(w, list);
  });
  const consumes: string[] = [];
  const root = (i: number, seen: Set<number>): string => {
    const m = members[i] as (typeof members)[number];
    const w = writers.get(m.processor.input);
    if (w === undefined) return m.processor.input;
    if (seen.has(w)) throw new TopologyError(`${m.processor.name} reads its own outputs through a cycle of processors`);
    return root(w, seen.add(i));
  };
  members.forEach((_, i) => consumes.push(root(i, new Set([i]))));
  const topics = [...new Set(members.filter((m) => !writers.has(m.processor.input)).map((m) => m.processor.input))];
  return { topics, chained, consumes };
}

/** The topics an application of these processors consumes. */
export function inputsOf(members: ReadonlyArray<{ readonly processor: { readonly name: string; readonly input: string; readonly outputs: readonly string[] } }>): string[] {
  return wiringOf(members).topics;
}

