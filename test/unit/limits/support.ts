/** Shared by the limits unit tests: agents, tenants, events and both processors on the in-memory store. */
import type { AgentDefinition } from "../../../config/agent.ts";
import type { TenantSettings } from "../../../config/tenant.ts";
import type { LimitsEnv } from "../../../processors/limits/env.ts";
import { limitsJobsProcessor } from "../../../processors/limits/jobs-processor.ts";
import { memoryLimitsStore } from "../../../processors/limits/memory-store.ts";
import { limitsModelCallsProcessor } from "../../../processors/limits/model-calls-processor.ts";
import { DEFAULT_PRICES } from "../../../processors/limits/prices.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { JobEvent, ModelCall } from "../../../schemas/types.ts";
import { uid } from "../../support/events.ts";

export function agent(name: string, over: Partial<AgentDefinition> = {}): AgentDefinition {
  return { name, tools: [], limits: { tree: {} }, delegation: { allow: [] }, loops: {}, spend: {}, ...over };
}

export function tenantSettings(over: Partial<TenantSettings> = {}): TenantSettings {
  return { id: "acme", limits: { tree: {} }, loops: {}, spend: {}, offload: {}, ...over };
}

export function setup(agents: AgentDefinition[], tenant: TenantSettings = tenantSettings(), store = memoryLimitsStore()) {
  const config = staticConfig([{ kind: "tenant", id: tenant.id, value: tenant }, ...agents.map((a) => ({ kind: "agent" as const, id: a.name, value: a }))]);
  const env: LimitsEnv = { store, config, prices: DEFAULT_PRICES };
  return { env, store, calls: new TestDriver(limitsModelCallsProcessor, env), jobs: new TestDriver(limitsJobsProcessor, env) };
}

export function jobEvent(tree: string, over: Partial<JobEvent> = {}): JobEvent {
  return { id: uid("evt"), tenant: "acme", tree_id: tree, job_id: tree, parent_job_id: null, run_id: "run-root", agent: "boss", kind: "started", started_by: "app", delegation: "none", depth: 0, outcome: null, principal: null, team: null, permissions: [], files: [], chosen_tree_id: false, conversation_id: null, previous_turn: null, ts: 1_000, ...over };
}

/** An ask of sonnet: 1,000 in and 1,000 out at most, a worst case of $0.018. */
export function modelCall(tree: string, over: Partial<ModelCall> = {}): ModelCall {
  return { id: uid("evt"), tenant: "acme", tree_id: tree, job_id: tree, run_id: "run-root", request_id: uid("req"), kind: "ask", model: "claude-sonnet-4", input_tokens: 1_000, max_output_tokens: 1_000, output_tokens: null, cache_read_tokens: 0, cache_write_tokens: 0, agent: "boss", ts: 1_000, ...over };
}

/** The usage report of an ask: 1,000 in and `output` out. */
export function usageOf(ask: ModelCall, output: number): ModelCall {
  return { ...ask, id: uid("evt"), kind: "usage", output_tokens: output };
}
