import { describe, expect, it } from "vitest";
import { badRequest, isRefusal, refusal, REFUSED_CODE, unauthorized, upstreamFailed, upstreamTimedOut, type AnthropicErrorBody, type OpenAIErrorBody } from "../../../client/gateway/errors.ts";
import { readAnthropicMessages, readOpenAIChat } from "../../../client/gateway/requests.ts";
import { checkBinding } from "../../../client/gateway/keys.ts";
import type { Decision, Verdict } from "../../../schemas/types.ts";

function decision(verdict: Verdict, reason_code: string | null, message: string, limit: string | null = null): Decision {
  return { id: "d-1", input_id: "mc-1", processor: "limits-model-calls", tenant: "acme", tree_id: "t-1", job_id: "j-1", run_id: "r-1", subject: "req-1", verdict, reason_code, limit, numbers: {}, message, evidence: null, ts: 1764684000000 };
}

/** The OpenAI shape exactly: one `error` with message, type, param and code, nothing else. */
function openAI(body: unknown): OpenAIErrorBody["error"] {
  expect(Object.keys(body as object)).toEqual(["error"]);
  const e = (body as OpenAIErrorBody).error;
  expect(Object.keys(e).sort()).toEqual(["code", "message", "param", "type"]);
  return e;
}

/** The Anthropic shape exactly: `type: "error"` and an `error` with type and message. */
function anthropic(body: unknown): AnthropicErrorBody["error"] {
  const b = body as AnthropicErrorBody;
  expect(Object.keys(b).sort()).toEqual(["error", "type"]);
  expect(b.type).toBe("error");
  expect(Object.keys(b.error).sort()).toEqual(["message", "type"]);
  return b.error;
}

const REFUSALS: Array<[string, Decision]> = [
  ["LIM-7: the tree's budget", decision("stop", "BudgetExceeded", "The tree has spent $4.98 of its $5.00 budget (limits.max_cost_usd); this call could cost $0.31. Raise limits.max_cost_usd to go on.", "limits.max_cost_usd")],
  ["LIM-10: the tenant's month", decision("refuse", "BudgetExceeded", "The tenant acme has spent its monthly budget of $200.00 (tenant.monthly_budget_usd).", "tenant.monthly_budget_usd")],
  ["LIM-2: the tree's model calls", decision("refuse", "oz0_tree_limit", "The tree has made its 40 model calls (limits.tree.model_calls).", "limits.tree.model_calls")],
  ["LIM-1: the run's steps", decision("stop", "UsageLimitExceeded", "The run has taken its 50 steps (limits.max_steps).", "limits.max_steps")],
  ["LIM-1: the job's timeout", decision("stop", "AgentTimeout", "The job has run 10m 2s, past its timeout of 10m (run --timeout).", "run --timeout")],
];

describe("gateway errors: a refusal is 402 in the provider's shape, with the seed's code and the decision's words", () => {
  for (const [name, d] of REFUSALS) {
    it(`${name}: OpenAI insufficient_quota with code ${d.reason_code}`, () => {
      const r = refusal("openai", d);
      expect(r.status).toBe(402);
      const e = openAI(r.body);
      expect(e.type).toBe("insufficient_quota");
      expect(e.code).toBe(d.reason_code);
      expect(e.param).toBeNull();
      expect(e.message).toBe(`${d.reason_code}: ${d.message}`);
    });

    it(`${name}: Anthropic billing_error with ${d.reason_code} in its words`, () => {
      const r = refusal("anthropic", d);
      expect(r.status).toBe(402);
      const e = anthropic(r.body);
      expect(e.type).toBe("billing_error");
      expect(e.message).toBe(`${d.reason_code}: ${d.message}`);
    });
  }

  it("a refusal without a reason code or words still says it was refused", () => {
    const e = openAI(refusal("openai", decision("stop", null, " ")).body);
    expect(e.code).toBe(REFUSED_CODE);
    expect(e.message).toMatch(/^oz0_refused: .*refused/);
  });

  it("only refuse and stop are refusals: allow and report go through, wait is held, and none of them makes a 402", () => {
    expect(isRefusal(decision("refuse", "oz0_tree_limit", "x"))).toBe(true);
    expect(isRefusal(decision("stop", "BudgetExceeded", "x"))).toBe(true);
    for (const v of ["allow", "wait", "report"] as const) {
      expect(isRefusal(decision(v, null, "x"))).toBe(false);
      expect(() => refusal("openai", decision(v, null, "x"))).toThrow(/not a refusal/);
    }
  });
});

describe("gateway errors: keys, bad requests and upstreams", () => {
  it("401 for an unknown, expired or revoked key: OpenAI invalid_api_key, Anthropic authentication_error, in the key check's words", () => {
    const bound = { id: "k-0123456789ab", tenant: "acme", agent: "a", tree_id: "t", job_id: "job-1", run_id: "r", created_by: "person:dana", created_at: 0, expires_at: 1_000, revoked_at: null, revoked_by: null };
    const checks = [checkBinding(null, 0), checkBinding(bound, 2_000), checkBinding({ ...bound, revoked_at: 500, revoked_by: "person:eve" }, 600)];
    for (const check of checks) {
      if (check.ok) throw new Error("a key that works");
      const o = unauthorized("openai", check);
      expect(o.status).toBe(401);
      const oe = openAI(o.body);
      expect([oe.type, oe.code, oe.param]).toEqual(["invalid_request_error", "invalid_api_key", null]);
      expect(oe.message).toBe(check.message);
      expect(oe.message).toMatch(check.reason === "unknown" ? /not known to oz0/ : new RegExp(`k-0123456789ab (was )?${check.reason}`));
      const a = unauthorized("anthropic", check);
      expect(a.status).toBe(401);
      expect(anthropic(a.body)).toEqual({ type: "authentication_error", message: oe.message });
    }
  });

  it("400 with the reader's words and field: OpenAI invalid_request_error with param, Anthropic invalid_request_error", () => {
    const o = readOpenAIChat({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }], max_tokens: "lots" });
    if (o.ok) throw new Error("expected a bad request");
    const r = badRequest("openai", o.error);
    expect(r.status).toBe(400);
    expect(openAI(r.body)).toEqual({ message: o.error.message, type: "invalid_request_error", param: "max_tokens", code: null });
    const a = readAnthropicMessages({ model: "claude-sonnet-4", messages: [{ role: "user", content: "hi" }] });
    if (a.ok) throw new Error("expected a bad request");
    const ra = badRequest("anthropic", a.error);
    expect(ra.status).toBe(400);
    expect(anthropic(ra.body)).toEqual({ type: "invalid_request_error", message: "max_tokens: Field required" });
  });

  it("502 for an upstream that failed and 504 for one that did not answer", () => {
    const o502 = upstreamFailed("openai", "openai");
    expect(o502.status).toBe(502);
    expect(openAI(o502.body)).toMatchObject({ type: "server_error", code: "upstream_error" });
    const a502 = upstreamFailed("anthropic", "anthropic");
    expect(a502.status).toBe(502);
    expect(anthropic(a502.body).type).toBe("api_error");
    const o504 = upstreamTimedOut("openai", "openai", 600_000);
    expect(o504.status).toBe(504);
    expect(openAI(o504.body)).toMatchObject({ type: "server_error", code: "upstream_timeout" });
    expect(openAI(o504.body).message).toMatch(/600000 ms/);
    const a504 = upstreamTimedOut("anthropic", "anthropic", 600_000);
    expect(a504.status).toBe(504);
    expect(anthropic(a504.body).type).toBe("timeout_error");
  });

  it("every body is JSON that reads back the same", () => {
    const all = [unauthorized("openai", { ok: false, reason: "unknown", message: "The API key is not known to oz0." }), refusal("anthropic", REFUSALS[0]![1]), upstreamFailed("openai", "x")];
    for (const r of all) expect(JSON.parse(JSON.stringify(r.body))).toEqual(r.body);
  });
});
