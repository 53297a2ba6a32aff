/**
 * What an admission answered, as the small integers the Lua scripts return, and one mapping to
 * names. The pure logic (admission.ts) and the scripts (store/redis/lua/) return the same codes.
 */

/** The answer to a model call's ask (LIM-1, LIM-2, LIM-7). */
export const CALL_CODES = ["allow", "allow_last_call", "tree_model_calls", "tree_tokens", "budget", "run_steps", "run_tokens", "job_timeout"] as const;
export type CallCode = (typeof CALL_CODES)[number];

/** The answer to a child's ask or start (LIM-3, LIM-5, LIM-6, LIM-10's quotas). */
export const CHILD_CODES = ["allow", "depth", "children", "fan_out", "budget", "delegation_depth", "delegation_children", "job_timeout", "quota"] as const;
export type ChildCode = (typeof CHILD_CODES)[number];

export function callCode(n: number): CallCode {
  const code = CALL_CODES[n];
  if (code === undefined) throw new Error(`a model call admission answered code ${n}, which is not one of ${CALL_CODES.length}: the script and codes.ts disagree`);
  return code;
}

export function childCode(n: number): ChildCode {
  const code = CHILD_CODES[n];
  if (code === undefined) throw new Error(`a child admission answered code ${n}, which is not one of ${CHILD_CODES.length}: the script and codes.ts disagree`);
  return code;
}
