/**
 * The limits processors keep each budget request they decide (`budget-requests.ts`): a wait
 * decision about spending names its approval in its evidence, and the request is kept with the
 * tree's state, so `oz0 approval list` shows it and `oz0 approval approve|deny` answers it.
 * Kept once: the approval is derived from the decision's ID, so a replay keeps the same one.
 */
import type { Decision } from "../../schemas/types.ts";
import type { Emit, Outcome } from "../runner/processor.ts";
import { budgetRequestOf, withApproval } from "./budget-requests.ts";
import type { LimitsEnv } from "./env.ts";

export async function keepBudgetRequests(env: LimitsEnv, outcomes: Outcome[]): Promise<Outcome[]> {
  const kept: Array<Promise<void>> = [];
  const out = outcomes.map((o): Outcome => {
    if (!("emits" in o)) return o;
    let changed = false;
    const emits = o.emits.map((e): Emit => {
      if (e.to !== "oz0.admissions") return e;
      const r = budgetRequestOf(e.value as Decision);
      if (!r) return e;
      changed = true;
      kept.push(env.store.putBudgetRequest(r));
      return { ...e, value: withApproval(e.value as Decision, r) };
    });
    return changed ? { ...o, emits } : o;
  });
  await Promise.all(kept);
  return out;
}
