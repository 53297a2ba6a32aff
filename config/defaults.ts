/**
 * The platform's defaults, from seed 003's table "Every limit in one table" and seed 000's
 * "Large results": what applies when neither the agent nor the tenant says.
 */
import type { EffectiveLoops, EffectiveSpend, EffectiveTreeLimits, OnLoop } from "./limits.ts";

/** LIM-4: children 500, fan_out 100, depth 10; the rest none. */
export const DEFAULT_TREE_LIMITS: EffectiveTreeLimits = Object.freeze({
  model_calls: null,
  tokens: null,
  children: 500,
  fan_out: 100,
  depth: 10,
  wait: null,
});

/** LOOP-2..LOOP-4. */
export const DEFAULT_LOOPS: EffectiveLoops = Object.freeze({ repeats: 3, cycles: 2, no_progress: 5 });

/** LOOP-5: an agent's loop waits for a person. */
export const DEFAULT_ON_LOOP: OnLoop = "wait";

/** LOOP-8: a harness session's loop is reported unless the agent or the tenant sets on_loop. */
export const HARNESS_ON_LOOP: OnLoop = "report";

/** LIM-8. */
export const DEFAULT_SPEND: EffectiveSpend = Object.freeze({
  warn_share: 0.8,
  soft_wall: 0.85,
  forecast: Object.freeze({ chance: 0.8, min_runs: 20 }),
});

/** OFF-13: the threshold when neither the agent nor the tenant sets one (provisional, until measured). */
export const DEFAULT_OFFLOAD_TOKENS = 10_000;

/** LIM-1. */
export const DEFAULT_MAX_STEPS = 50;

/** LIM-1: a session's timeout when its agent sets none. */
export const SESSION_TIMEOUT_MS = 2 * 60 * 60 * 1000;

/** LIM-6. */
export const DEFAULT_DELEGATION_MAX_DEPTH = 1;
