/**
 * Runs one lane of a batch: reads every run's state in one round trip, steps each input in
 * order, writes every run's state in one round trip. An input whose offset was applied before
 * (the batch is handled again after a failed commit) changes nothing and emits what it emitted
 * the first time: its remembered outputs, or the plain ones. Outputs that follow from the input
 * and a few words alone (a call refused because the job stopped) are remembered as those words
 * (`recall`) and built again from them (`LaneSpec.replay`), not kept whole.
 */
import { byGroups } from "../runner/isolate.ts";
import type { Emit, InputRecord, Outcome } from "../runner/processor.ts";
import { withBehind, type Deadline, type FlagField, type Lane, type LaneWrite, type LoopCount, type LoopStore, type RunFlags } from "./store.ts";

export interface LaneStep<S, R = never> {
  readonly state: S;
  readonly emits: readonly Emit[];
  /** The outputs depend on this moment's state (a loop acted on): kept, so a replay emits the same. */
  readonly remember: boolean;
  /**
   * What to keep instead of the outputs, when `LaneSpec.replay` builds the same outputs again
   * from it and the input: a few words, where the outputs run to a kilobyte or more.
   */
  readonly recall?: R;
  readonly flags?: ReadonlyArray<readonly [FlagField, string]>;
  readonly deadlines?: readonly Deadline[];
  readonly settled?: readonly Deadline[];
  readonly counts?: readonly LoopCount[];
}

/** `A`: what the steps need besides the runs' state (the jobs' standings), read beside it. */
export interface LaneSpec<In, S, R = never, A = undefined> {
  readonly lane: Lane;
  runOf(value: In): string;
  /** The input's tenant: two tenants' runs of the same ID never share loop state. */
  tenantOf(value: In): string;
  readonly initial: S;
  /** Steps one input; `invalid` sends it to the dead letters (remembered, so a replay does the same). */
  step(state: S, flags: RunFlags, record: InputRecord<In>, alongside: A): LaneStep<S, R> | { readonly invalid: string };
  /** What an input that changed nothing worth remembering emits; a pure function of the input. */
  plain(record: InputRecord<In>): Emit[];
  /** The outputs of an input whose step gave `recall`: the same as that step's, a pure function of the input and the recall. */
  replay?(record: InputRecord<In>, recall: R): Emit[];
}

/** A memo is the outcome as JSON, or `{"recall": ...}` for a step that gave one. */
function replayed<In, S, R, A>(spec: LaneSpec<In, S, R, A>, record: InputRecord<In>, memo: string): Outcome {
  const parsed = JSON.parse(memo) as Outcome | { readonly recall: R };
  if (!("recall" in parsed)) return parsed;
  if (!spec.replay) throw new Error(`the ${spec.lane} lane kept a recall for offset ${record.offset} but has no replay for it`);
  return { emits: spec.replay(record, parsed.recall) };
}

function raise(flags: RunFlags, field: FlagField, value: string): RunFlags {
  if (field === "stopped") return flags.stopped === null ? { ...flags, stopped: value } : flags;
  if (field === "finish_only") return flags.finishOnly === null ? { ...flags, finishOnly: value } : flags;
  if (field.startsWith("behind:")) return { ...flags, behind: withBehind(flags.behind, field, value) };
  const [kind, approval] = [field.slice(0, field.indexOf(":")), field.slice(field.indexOf(":") + 1)];
  if (kind === "approved") return { ...flags, approved: new Set([...flags.approved, approval]) };
  if (kind === "denied") return { ...flags, denied: new Set([...flags.denied, approval]) };
  if (kind === "escalated") return { ...flags, escalated: new Set([...flags.escalated, approval]) };
  return flags.holds.has(approval) ? flags : { ...flags, holds: new Map([...flags.holds, [approval, JSON.parse(value) as Deadline]]) };
}

function sourceOf(r: InputRecord<unknown>): string {
  return `${r.topic}:${r.partition}`;
}

/**
 * The lane's outcome for each input. A run whose state the store refuses for good (a key
 * holding another kind of value) dead-letters that run's inputs, with the store's words and the
 * key, and only those: the batch is tried again run by run, and a failing run input by input
 * (`byGroups`); every other run is decided as it would have been.
 */
export function runLane<In, S, R = never>(spec: LaneSpec<In, S, R>, store: LoopStore, records: ReadonlyArray<InputRecord<In>>): Promise<Outcome[]>;
export function runLane<In, S, R, A>(
  spec: LaneSpec<In, S, R, A>,
  store: LoopStore,
  records: ReadonlyArray<InputRecord<In>>,
  /** What the steps need besides the runs' state, read in the same round trip as the runs: no step runs before it answers. */
  alongside: Promise<A>,
): Promise<Outcome[]>;
export function runLane<In, S, R, A>(spec: LaneSpec<In, S, R, A>, store: LoopStore, records: ReadonlyArray<InputRecord<In>>, alongside?: Promise<A>): Promise<Outcome[]> {
  const side = alongside ?? (Promise.resolve(undefined) as Promise<A>);
  // Its failure is the lane's to raise, once it awaits it.
  side.catch(() => undefined);
  return byGroups(records, (r) => `${spec.tenantOf(r.value)}\u0000${spec.runOf(r.value)}`, (some) => runLaneOnce(spec, store, some, side));
}

async function runLaneOnce<In, S, R, A>(spec: LaneSpec<In, S, R, A>, store: LoopStore, records: ReadonlyArray<InputRecord<In>>, alongside: Promise<A>): Promise<Outcome[]> {
  const groups = new Map<string, number[]>();
  records.forEach((r, i) => {
    const key = `${spec.tenantOf(r.value)}\u0000${spec.runOf(r.value)}\u0000${sourceOf(r)}`;
    const list = groups.get(key) ?? [];
    list.push(i);
    groups.set(key, list);
  });
  const reads = [...groups.values()].map((indexes) => {
    const first = records[indexes[0] as number] as InputRecord<In>;
    // Memos before the batch's start are no replay's to read: dropped when the run is written. Kept all where the source cannot say.
    const from = first.batchStart ?? "-1";
    return { tenant: spec.tenantOf(first.value), run: spec.runOf(first.value), source: sourceOf(first), offsets: indexes.map((i) => (records[i] as InputRecord<In>).offset), from };
  });
  const [snapshots, side] = await Promise.all([store.read(spec.lane, reads), alongside]);

  const outcomes: Outcome[] = new Array<Outcome>(records.length);
  const writes: LaneWrite[] = [];
  [...groups.values()].forEach((indexes, g) => {
    const read = reads[g] as (typeof reads)[number];
    const snap = snapshots[g];
    if (!snap) throw new Error(`the loop store answered ${snapshots.length} reads for ${reads.length} runs`);
    const before = snap.state === null ? spec.initial : (JSON.parse(snap.state) as S);
    let state = before;
    // Offsets at or below this one were applied before: their outcomes are replayed.
    const applied = snap.at === null ? null : BigInt(snap.at);
    let flags = snap.flags;
    const memos: Array<readonly [string, string]> = [];
    const raised: Array<readonly [FlagField, string]> = [];
    const deadlines: Deadline[] = [];
    const settled: Deadline[] = [];
    const counts: LoopCount[] = [];
    let newest: string | null = null;
    for (const i of indexes) {
      const r = records[i] as InputRecord<In>;
      if (applied !== null && BigInt(r.offset) <= applied) {
        const memo = snap.memos.get(r.offset);
        outcomes[i] = memo === undefined ? { emits: spec.plain(r) } : replayed(spec, r, memo);
        continue;
      }
      newest = r.offset;
      const step = spec.step(state, flags, r, side);
      if ("invalid" in step) {
        memos.push([r.offset, JSON.stringify(step)]);
        outcomes[i] = step;
        continue;
      }
      state = step.state;
      for (const [field, value] of step.flags ?? []) {
        flags = raise(flags, field, value);
        raised.push([field, value]);
      }
      deadlines.push(...(step.deadlines ?? []));
      settled.push(...(step.settled ?? []));
      counts.push(...(step.counts ?? []));
      outcomes[i] = { emits: step.emits };
      if (step.remember) memos.push([r.offset, JSON.stringify(step.recall === undefined ? outcomes[i] : { recall: step.recall })]);
    }
    // A state no step replaced (every input refused, held or stopped) is written back as it was read.
    const text = state === before && snap.state !== null ? snap.state : JSON.stringify(state);
    if (newest !== null) writes.push({ tenant: read.tenant, run: read.run, source: read.source, at: newest, from: read.from, state: text, memos, flags: raised, deadlines, settled, counts });
  });
  await store.write(spec.lane, writes);
  return outcomes;
}
