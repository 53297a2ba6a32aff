/**
 * LIM-1: a job's timeout, pure. Its agent's `limits.timeout` (two hours for a session whose
 * agent sets none) and its own `run --timeout`, kept with its start, both hold: whichever ends
 * first ends the job with AgentTimeout. Both count from the job's start, once it was seen.
 */
import type { AgentDefinition } from "../../config/agent.ts";
import { resolveJobLimits } from "../../config/resolve.ts";
import type { JobClock } from "./store.ts";
import { NO_LIMIT } from "./tree-settings.ts";

export type TimeoutLimit = "limits.timeout" | "run --timeout";

export interface JobTimeout {
  /** The timeout that ends first, ms; null for none. */
  readonly ms: number | null;
  /** Which one it is, as the decision's `limit` names it. */
  readonly limit: TimeoutLimit;
  /** When it ends (ms), NO_LIMIT for none or a start not seen. */
  readonly deadline: number;
}

export function jobTimeout(agent: Pick<AgentDefinition, "limits"> | undefined, job: Pick<JobClock, "jobStart" | "jobTimeout" | "jobSession">): JobTimeout {
  const agentMs = resolveJobLimits(agent, { session: job.jobSession }).timeout;
  const own = job.jobTimeout >= 0 ? job.jobTimeout : null;
  const run = own !== null && (agentMs === null || own < agentMs);
  const ms = run ? own : agentMs;
  return { ms, limit: run ? "run --timeout" : "limits.timeout", deadline: ms === null || job.jobStart === -1 ? NO_LIMIT : job.jobStart + ms };
}
