/**
 * Isolating a failure that trying again cannot help (a store refused a key for good, a
 * script's own error) to the inputs that cause it, inside a core that decides its inputs in
 * groups (a run's, a tree's): the rest of the batch, and of the partition, goes on.
 *
 * Each attempt runs the group's steps again from the start; every step is idempotent by its
 * input, so what an earlier attempt applied changes nothing the second time and answers the
 * same. A retriable error is thrown as it is: the runner tries the whole batch again.
 */
import { isRetriable, messageOf } from "./errors.ts";
import type { Outcome } from "./processor.ts";

/** The dead letter of an input a dependency refused for good, in the refusal's words. */
export function failedOutcome(err: unknown): Outcome {
  return { invalid: `processing failed: ${messageOf(err)}`, error: "failed" };
}

/**
 * `decide` of each item alone, in order: an item that fails for good is a dead letter in the
 * failure's words, and a retriable failure is thrown as it is. The one way an input that breaks
 * its batch is told from the rest, for the runner (`batch.ts`) and for the cores that decide
 * their inputs in groups.
 */
export async function eachAlone<T>(items: readonly T[], decide: (items: T[]) => Promise<Outcome[]>): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (const item of items) {
    try {
      const [one] = await decide([item]);
      out.push(one ?? { invalid: "processing returned nothing", error: "failed" });
    } catch (err) {
      if (isRetriable(err)) throw err;
      out.push(failedOutcome(err));
    }
  }
  return out;
}

/**
 * `decide` of every item at once; when that fails for good, each item alone (`eachAlone`). A
 * key that breaks every input touching it dead-letters each of them; one input a script
 * refuses dead-letters that one.
 */
export async function oneByOne<T>(items: readonly T[], decide: (items: T[]) => Promise<Outcome[]>): Promise<Outcome[]> {
  try {
    return await decide([...items]);
  } catch (err) {
    if (isRetriable(err) || items.length === 0) throw err;
    if (items.length === 1) return [failedOutcome(err)];
  }
  return eachAlone(items, decide);
}

/**
 * `decide` of every item at once (one round trip for the batch); when that fails for good,
 * each group alone (`groupOf`), and in a group that fails alone, each of its items alone
 * (`oneByOne`). Outcomes in the items' order.
 */
export async function byGroups<T>(items: readonly T[], groupOf: (item: T) => string, decide: (items: T[]) => Promise<Outcome[]>): Promise<Outcome[]> {
  try {
    return await decide([...items]);
  } catch (err) {
    if (isRetriable(err)) throw err;
  }
  const groups = new Map<string, number[]>();
  items.forEach((item, i) => {
    const key = groupOf(item);
    const list = groups.get(key);
    if (list) list.push(i);
    else groups.set(key, [i]);
  });
  const out = new Array<Outcome>(items.length);
  for (const indexes of groups.values()) {
    const outcomes = await oneByOne(
      indexes.map((i) => items[i] as T),
      decide,
    );
    indexes.forEach((i, j) => (out[i] = outcomes[j] ?? { invalid: "processing returned nothing", error: "failed" }));
  }
  return out;
}
