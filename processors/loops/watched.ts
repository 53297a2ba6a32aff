/**
 * Which calls the loop detector watches (LOOP-1): every call of the tenant's tools an agent,
 * a flow step, a harness session or a remote agent makes. Not a person's call by hand, and not
 * the answer: the platform's own `oz0` answer and a routine's `oz0.output` stay callable even
 * when no progress has withdrawn every other tool (LOOP-7).
 */
import type { CallOrigin } from "../../schemas/types.ts";

export const ANSWER_PLUGIN = "oz0";
export const ANSWER_FUNCTIONS: readonly string[] = ["answer", "output"];

export function isAnswer(call: { plugin: string; function: string }): boolean {
  return call.plugin === ANSWER_PLUGIN && ANSWER_FUNCTIONS.includes(call.function);
}

export function isWatched(call: { plugin: string; function: string; origin: CallOrigin }): boolean {
  return call.origin !== "person" && !isAnswer(call);
}
