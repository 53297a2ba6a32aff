/**
 * What the pipeline causes per event published, beyond what a bare passthrough causes: the CPU of
 * its process plus what each service (the broker, MinIO, Redis, the registry) spent in the
 * pipeline's phase beyond the passthrough's phase; the records it adds to Kafka; the objects it
 * puts to MinIO. Pure: readings in, figures and words out.
 */
import { fmt } from "./stats.ts";

/** One part of the CPU the pipeline causes, in ms per event; null when a reading it needs is missing. */
export interface CausedPart {
  readonly name: string;
  readonly ms: number | null;
}

/** A reading of each phase, in ms per event; null where it could not be read. */
export interface PhaseReading {
  readonly pipeline: number | null;
  readonly passthrough: number | null;
}

export interface Caused {
  readonly parts: readonly CausedPart[];
  /** The sum of the parts; null when any part is unknown. */
  readonly total: number | null;
  /** The sum of the parts known: with parts unknown, the least the total can be (no part is below 0). */
  readonly known: number;
  /** The names of the parts not known. */
  readonly unknown: readonly string[];
}

/** What the pipeline's phase spent per event beyond the passthrough's phase, never below 0; null when either was not read. */
export function extra(r: PhaseReading): number | null {
  return r.pipeline === null || r.passthrough === null ? null : Math.max(0, r.pipeline - r.passthrough);
}

/** A count per event; null when the count was not read or nothing was published. */
export function perEvent(count: number | null | undefined, events: number): number | null {
  return count === null || count === undefined || events <= 0 ? null : count / events;
}

/**
 * The CPU caused by the pipeline, in ms per event: `process` (its process, however the caller
 * reads it) plus, for each of `services`, its extra (`extra`), each named `<service>'s extra`.
 */
export function causedByPipeline(process: CausedPart, services: ReadonlyArray<{ readonly name: string } & PhaseReading>): Caused {
  const parts: CausedPart[] = [process, ...services.map((s) => ({ name: `${s.name}'s extra`, ms: extra(s) }))];
  const unknown = parts.filter((p) => p.ms === null).map((p) => p.name);
  const known = parts.reduce((sum, p) => sum + (p.ms ?? 0), 0);
  return { parts, total: unknown.length === 0 ? known : null, known, unknown };
}

/** The total for a table's cell: `3.85`, or `at least 2.95` when a part is unknown. */
export function causedTotal(c: Caused): string {
  return c.total !== null ? fmt(c.total, 2) : `at least ${fmt(c.known, 2)}`;
}

/** The total and its parts: `3.85 = the pipeline's process 1.99 + the broker's extra 0.90 + ...`, each unknown part named so. */
export function describeCaused(c: Caused): string {
  const parts = c.parts.map((p) => `${p.name} ${p.ms === null ? "unknown" : fmt(p.ms, 2)}`).join(" + ");
  const sum = `${causedTotal(c)} = ${parts}`;
  return c.unknown.length === 0 ? sum : `${sum} (unknown, as a reading is missing: ${c.unknown.join(", ")}; the total counts the parts known)`;
}

/**
 * Records a phase added to Kafka per event published: the growth of its topics' end offsets
 * (`growth`, summed over every partition, transaction markers included) less the events
 * published, over the events published; null when the offsets were not read or nothing was published.
 */
export function recordsPerEvent(growth: number | null | undefined, events: number): number | null {
  return growth === null || growth === undefined ? null : perEvent(growth - events, events);
}
