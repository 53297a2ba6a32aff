/**
 * The error bodies `oz0 gateway` answers with, each in its provider's own shape, so the
 * agent's SDK raises its ordinary error with the status and the words (docs/gateway.md).
 *
 * OpenAI: `{"error": {"message", "type", "param", "code"}}`.
 * Anthropic: `{"type": "error", "error": {"type", "message"}}`.
 *
 * | status | when | OpenAI type (code) | Anthropic type |
 * | --- | --- | --- | --- |
 * | 400 | the body is not a valid request (requests.ts) | invalid_request_error (null) | invalid_request_error |
 * | 401 | the key is unknown, expired or revoked | invalid_request_error (invalid_api_key), as OpenAI answers a wrong key | authentication_error |
 * | 402 | limits-model-calls refused the call | insufficient_quota (the decision's reason code) | billing_error |
 * | 502 | the upstream failed before answering (refused, reset, not HTTP) | server_error (upstream_error) | api_error |
 * | 504 | the upstream did not answer in time | server_error (upstream_timeout) | timeout_error |
 *
 * Why those for 402: Anthropic documents 402 itself as `billing_error` (a problem with paying
 * for the request), which is what a spent budget is. OpenAI has no 402 of its own; the type
 * it gives when what an account may spend is used up is `insufficient_quota`, which agents
 * already treat as "do not retry". Every refusal of the limits (the budget, the tree's
 * calls or tokens, the run's steps, the job's time) is an allowance this job has used up, so
 * all take that type; the decision's reason code (oz0_tree_limit, BudgetExceeded,
 * UsageLimitExceeded, AgentTimeout, ...) is OpenAI's `code`, and since Anthropic's shape has
 * no code, every message starts with it ("BudgetExceeded: ...") in both shapes.
 * A provider's own error is not made here: it passes through with its status and body.
 */
import type { Decision } from "../../schemas/types.ts";
import type { KeyCheck } from "./keys.ts";
import type { Provider, RequestError } from "./requests.ts";

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export interface AnthropicErrorBody {
  type: "error";
  error: { type: string; message: string };
}

export type ErrorBody = OpenAIErrorBody | AnthropicErrorBody;

export interface ErrorReply {
  readonly status: number;
  readonly body: ErrorBody;
}

/** OpenAI's type and code and Anthropic's type for one error. */
interface Kind {
  readonly status: number;
  readonly openai: string;
  readonly code: string | null;
  readonly anthropic: string;
}

function reply(provider: Provider, kind: Kind, message: string, param: string | null = null): ErrorReply {
  if (provider === "openai") return { status: kind.status, body: { error: { message, type: kind.openai, param, code: kind.code } } };
  return { status: kind.status, body: { type: "error", error: { type: kind.anthropic, message } } };
}

/** Why a key was not taken. The key itself is never put in a reply. */
/** 401: a key that does not work (none, unknown, expired or revoked), with the key check's words (naming the key's ID and when). */
export function unauthorized(provider: Provider, failed: Extract<KeyCheck, { ok: false }>): ErrorReply {
  return reply(provider, { status: 401, openai: "invalid_request_error", code: "invalid_api_key", anthropic: "authentication_error" }, failed.message);
}

/** 400: the body is not a valid request for its API (the reader's error). */
export function badRequest(provider: Provider, error: RequestError): ErrorReply {
  return reply(provider, { status: 400, openai: "invalid_request_error", code: null, anthropic: "invalid_request_error" }, error.message, error.param);
}

/** Whether a decision refuses the call: `refuse` or `stop` (a `wait` holds it; `allow` and `report` let it through). */
export function isRefusal(decision: Decision): boolean {
  return decision.verdict === "refuse" || decision.verdict === "stop";
}

/** The code a refusal with no reason code is answered with. */
export const REFUSED_CODE = "oz0_refused";

/** 402: limits-model-calls refused the call, with its reason code and its words. */
export function refusal(provider: Provider, decision: Decision): ErrorReply {
  if (!isRefusal(decision)) throw new Error(`decision ${decision.id} is ${decision.verdict}, not a refusal: only refuse and stop are answered with 402`);
  const code = decision.reason_code || REFUSED_CODE;
  const words = decision.message.trim() || "The call was refused by the job's limits.";
  return reply(provider, { status: 402, openai: "insufficient_quota", code, anthropic: "billing_error" }, `${code}: ${words}`);
}

/** 502: the upstream failed before it answered (connection refused or reset, a reply that is not HTTP). */
export function upstreamFailed(provider: Provider, upstream: string): ErrorReply {
  return reply(provider, { status: 502, openai: "server_error", code: "upstream_error", anthropic: "api_error" }, `The model provider (${upstream}) could not be reached or gave no valid answer.`);
}

/** 504: the upstream did not answer in time. */
export function upstreamTimedOut(provider: Provider, upstream: string, afterMs: number): ErrorReply {
  return reply(provider, { status: 504, openai: "server_error", code: "upstream_timeout", anthropic: "timeout_error" }, `The model provider (${upstream}) did not answer within ${afterMs} ms.`);
}

/** 503: the guard rails did not decide the call in time (the pipeline is down or behind); the call is not made. */
export function notDecided(provider: Provider, afterMs: number, detail: string): ErrorReply {
  return reply(
    provider,
    { status: 503, openai: "server_error", code: "oz0_no_decision", anthropic: "overloaded_error" },
    `The guard rails did not decide the call within ${afterMs} ms, so it was not made: ${detail}`,
  );
}

/** 404: a path the gateway does not serve. */
export function notFound(provider: Provider, method: string, path: string): ErrorReply {
  return reply(
    provider,
    { status: 404, openai: "invalid_request_error", code: "unknown_url", anthropic: "not_found_error" },
    `Unknown request URL: ${method} ${path}. The gateway serves POST /v1/chat/completions, POST /v1/responses, POST /v1/messages and GET /v1/models.`,
  );
}

/** 413: a body above the gateway's limit. */
export function tooLarge(provider: Provider, maxBytes: number): ErrorReply {
  return reply(provider, { status: 413, openai: "invalid_request_error", code: "request_too_large", anthropic: "request_too_large" }, `The request body is larger than ${maxBytes} bytes.`);
}

/** 501: no upstream is set for the provider this request speaks to. */
export function noUpstream(provider: Provider): ErrorReply {
  return reply(
    provider,
    { status: 501, openai: "server_error", code: "no_upstream", anthropic: "api_error" },
    `The gateway has no ${provider} upstream: start it with --upstream ${provider}=URL (or OZ0_GATEWAY_UPSTREAM_${provider.toUpperCase()}).`,
  );
}
