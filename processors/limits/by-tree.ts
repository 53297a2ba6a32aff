/**
 * Decides a batch's trees concurrently, each tree's inputs in their order. Trees need no order
 * between them: each script is atomic on its own keys, and the keys trees share (a tenant's
 * month, a principal's or team's month, an agent's forecast) are changed only by atomic,
 * idempotent scripts. The round trips of many trees then share the Redis connection.
 */
import { oneByOne } from "../runner/isolate.ts";
import type { InputRecord, Outcome } from "../runner/processor.ts";

/**
 * One outcome per input, in input order, from `decide` run tree by tree (`treeOf`), the trees
 * at once. Every tree finishes before an error is thrown, so no step of the batch is still
 * under way when the runner tries it again.
 */
export function byTree<In, Tree>(
  records: ReadonlyArray<InputRecord<In>>,
  treeOf: (value: In) => string,
  newTree: () => Tree,
  decide: (value: In, tree: Tree) => Promise<Outcome>,
): Promise<Outcome[]> {
  return byTreeGroups(records, treeOf, async (values) => {
    const tree = newTree();
    const out: Outcome[] = [];
    for (const v of values) out.push(await decide(v, tree));
    return out;
  });
}

/**
 * As `byTree`, with each tree's inputs handed to `decideTree` at once (in their order), which
 * answers one outcome for each: for steps of a tree that can go to the store together. When a
 * tree fails for good (a store refused its key, a script refused a step), its inputs are
 * decided again one by one, and those that still fail are dead-lettered with the store's words
 * (`oneByOne`); the other trees are not touched. `decideTree` may then be called more than once
 * for a tree, with some of its inputs: it must keep nothing of a failed call.
 */
export async function byTreeGroups<In>(
  records: ReadonlyArray<InputRecord<In>>,
  treeOf: (value: In) => string,
  decideTree: (values: In[]) => Promise<Outcome[]>,
): Promise<Outcome[]> {
  const groups = new Map<string, number[]>();
  records.forEach(({ value }, i) => {
    const key = treeOf(value);
    const list = groups.get(key);
    if (list) list.push(i);
    else groups.set(key, [i]);
  });
  const out = new Array<Outcome>(records.length);
  const settled = await Promise.allSettled(
    [...groups.values()].map(async (indexes) => {
      // A tree the store refuses for good dead-letters its inputs that fail alone, and only those.
      const outcomes = await oneByOne(
        indexes.map((i) => (records[i] as InputRecord<In>).value),
        decideTree,
      );
      if (outcomes.length !== indexes.length) throw new Error(`a tree's ${indexes.length} inputs were answered with ${outcomes.length} outcomes`);
      indexes.forEach((i, j) => (out[i] = outcomes[j] as Outcome));
    }),
  );
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  return out;
}

/** A batch's group of a tenant's tree: two tenants' trees of one ID are two trees. */
export function treeKey(tenant: string, treeId: string): string {
  return JSON.stringify([tenant, treeId]);
}

/** Promise.all that waits for every step before it throws the first error, so none is left under way. */
export async function allSettledOrThrow<T extends readonly unknown[]>(steps: { -readonly [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(steps);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
