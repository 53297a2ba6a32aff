/**
 * A trivial processor that proves the runner: it counts each run's tool calls (once per input
 * offset, so a replay never double counts) and answers each call with an `allow` decision
 * carrying the count. Calls whose arguments are not a JSON object are invalid.
 */
import type { RedisClient } from "../../store/redis/client.ts";
import type { Decision, ToolCall } from "../../schemas/types.ts";
import { deriveId } from "../../processors/runner/ids.ts";
import { defineProcessor, type Outcome } from "../../processors/runner/processor.ts";
import type { Keys } from "../../store/redis/keys.ts";
import { runScript } from "../../store/redis/scripts.ts";

export interface TallyEnv {
  /** Counts one call of a run from an input position; returns the run's count. */
  tally(runId: string, source: string, offset: string): Promise<number>;
}

export const tallyProcessor = defineProcessor<ToolCall, TallyEnv>({
  name: "tally",
  input: "oz0.tool-calls",
  outputs: ["oz0.call-decisions"],
  validate(call) {
    const reasons: string[] = [];
    if (!call.run_id) reasons.push("run_id is empty: every tool call names its run");
    try {
      const args: unknown = JSON.parse(call.arguments);
      if (args === null || typeof args !== "object" || Array.isArray(args)) reasons.push("arguments must be a JSON object");
    } catch {
      reasons.push(`arguments are not JSON: ${call.arguments.slice(0, 60)}`);
    }
    return reasons;
  },
  async process(records, env) {
    const out: Outcome[] = [];
    for (const r of records) {
      const call = r.value;
      const count = await env.tally(call.run_id, `${r.topic}:${r.partition}`, r.offset);
      const decision: Decision = {
        id: deriveId("tally", call.id),
        input_id: call.id,
        processor: "tally",
        tenant: call.tenant,
        tree_id: call.tree_id,
        job_id: call.job_id,
        run_id: call.run_id,
        subject: call.call_id,
        verdict: "allow",
        reason_code: null,
        limit: null,
        numbers: { calls: count },
        message: "",
        evidence: null,
        ts: call.ts,
      };
      out.push({ emits: [{ to: "oz0.call-decisions", key: call.run_id, value: decision }] });
    }
    return out;
  },
});

/** The tally in memory, for the test driver. */
export function memoryTally(): TallyEnv & { counts: Map<string, number> } {
  const counts = new Map<string, number>();
  const applied = new Map<string, number>();
  return {
    counts,
    tally: (runId, source, offset) => {
      const key = `${runId}|${source}`;
      const n = Number(offset);
      if ((applied.get(key) ?? -1) < n) {
        applied.set(key, n);
        counts.set(runId, (counts.get(runId) ?? 0) + 1);
      }
      return Promise.resolve(counts.get(runId) ?? 0);
    },
  };
}

/** The tally in Redis, through the idempotent `tallyOnce` script. */
export function redisTally(redis: RedisClient, keys: Keys, ttlSeconds = 3600): TallyEnv {
  return {
    tally: async (runId, source, offset) => {
      const [, count] = (await runScript(redis, "tallyOnce", [keys.tally(runId)], ["calls", source, offset, ttlSeconds])) as [number, number];
      return count;
    },
  };
}
