/** TypeScript shapes of the events in `schemas/*.avsc`. Keep each in step with its schema. */

export type CallOrigin = "model" | "flow_step" | "harness" | "acp" | "remote" | "person";

export interface ToolCall {
  id: string;
  tenant: string;
  tree_id: string;
  job_id: string;
  run_id: string;
  call_id: string;
  agent: string;
  plugin: string;
  tool: string;
  function: string;
  /** JSON object text. */
  arguments: string;
  origin: CallOrigin;
  context_used: number | null;
  spend_share: number | null;
  ts: number;
}

export interface ToolResult {
  id: string;
  tenant: string;
  tree_id: string;
  job_id: string;
  run_id: string;
  call_id: string;
  agent: string;
  plugin: string;
  tool: string;
  function: string;
  arguments: string;
  origin: CallOrigin;
  is_error: boolean;
  content: string | null;
  content_ref: string | null;
  size_bytes: number;
  ts: number;
  /** OFF-9: the result's labels, kept with it when it is offloaded. */
  labels: string[];
  /** LOOP-7: on oz0.tool-results.watched, the words of the no-progress line this result crossed (loop-results sets it; runtimes leave it out). */
  no_progress?: string | null;
}

export type ModelCallKind = "ask" | "usage" | "rewarm";

export interface ModelCall {
  id: string;
  tenant: string;
  tree_id: string;
  job_id: string;
  run_id: string;
  request_id: string;
  kind: ModelCallKind;
  model: string;
  input_tokens: number;
  max_output_tokens: number | null;
  output_tokens: number | null;
  cache_read_tokens: number;
  cache_write_tokens: number;
  /** The agent of the job making the call; null when the runtime does not say. */
  agent: string | null;
  ts: number;
}

export type JobEventKind = "child_ask" | "started" | "ended" | "wait_started" | "wait_ended";
export type StartedBy = "person" | "app" | "agent" | "schedule";
export type ChildKind = "none" | "delegation" | "flow_tool" | "flow_step" | "reviewer";

export interface JobEvent {
  id: string;
  tenant: string;
  tree_id: string;
  job_id: string;
  parent_job_id: string | null;
  run_id: string | null;
  agent: string;
  kind: JobEventKind;
  started_by: StartedBy;
  delegation: ChildKind;
  depth: number;
  outcome: string | null;
  /** FILE-4, LIM-10: the person or app that started the tree. */
  principal: string | null;
  team: string | null;
  permissions: string[];
  /** FILE-4: refs handed to the job at start. */
  files: string[];
  /** FILE-5: the start names its tree ID itself. */
  chosen_tree_id: boolean;
  /** FILE-3: the conversation and the turn this one follows (or forks from). */
  conversation_id: string | null;
  previous_turn: string | null;
  /** LIM-1: run --timeout (ms) and run --budget (USD) for this one job, and whether it is a session (2h default timeout); left out, none. */
  timeout_ms?: number | null;
  budget_usd?: number | null;
  session?: boolean;
  ts: number;
}

export type Verdict = "allow" | "wait" | "stop" | "refuse" | "report";

export interface Decision {
  id: string;
  input_id: string;
  processor: string;
  tenant: string;
  tree_id: string;
  job_id: string;
  run_id: string | null;
  subject: string;
  verdict: Verdict;
  reason_code: string | null;
  limit: string | null;
  numbers: Record<string, number>;
  message: string;
  /** JSON text. */
  evidence: string | null;
  ts: number;
}

export interface DeadLetter {
  id: string;
  processor: string;
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  reason: string;
  error: DeadLetterError;
  ts: number;
}

/** Why an input was dead-lettered, as a class a dashboard can count. */
export type DeadLetterError = "undecodable" | "unknown_schema" | "wrong_schema" | "invalid" | "failed";

/** `kill_switch`: a plugin's tool switched off cluster-wide (LOOP-9), id `<plugin>/<tool>`. */
export type ConfigKind = "agent" | "plugin" | "tenant" | "kill_switch";

export interface ConfigRecord {
  kind: ConfigKind;
  id: string;
  /** JSON text. */
  value: string;
  source: string;
  reason: string | null;
  ts: number;
}

export interface ResultDelivered {
  id: string;
  input_id: string;
  processor: string;
  tenant: string;
  tree_id: string;
  job_id: string;
  run_id: string;
  call_id: string;
  plugin: string;
  tool: string;
  function: string;
  is_error: boolean;
  /** MCP CallToolResult JSON. */
  content: string;
  truncated: boolean;
  /** Fit note JSON, or null when nothing was fitted. */
  fit: string | null;
  ts: number;
}

export interface TraceEntry {
  id: string;
  processor: string;
  tenant: string;
  tree_id: string;
  job_id: string;
  run_id: string | null;
  section: string;
  subject: string;
  facts: Record<string, string>;
  numbers: Record<string, number>;
  ts: number;
}

export interface AuditEvent {
  id: string;
  kind: string;
  tenant: string | null;
  tree_id: string | null;
  job_id: string | null;
  actor: string | null;
  reason: string | null;
  facts: Record<string, string>;
  numbers: Record<string, number>;
  ts: number;
}
