import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseAgent, type AgentDefinition } from "../../../config/agent.ts";
import { DEFAULT_OFFLOAD_TOKENS } from "../../../config/defaults.ts";
import type { LimitSetting, TreeLimitSettings } from "../../../config/limits.ts";
import {
  resolveDelegation,
  resolveJobLimits,
  resolveLoopSettings,
  resolveOffloadThreshold,
  resolveOnBudget,
  resolveOnUnknown,
  resolveSpend,
  resolveTreeLimits,
} from "../../../config/resolve.ts";
import { parseTenant, type TenantSettings } from "../../../config/tenant.ts";
import { example, valueOf } from "./helpers.ts";

const agent = (yaml: string): AgentDefinition => valueOf(parseAgent(yaml, "agents/a.yaml"));
const tenant = (yaml: string): TenantSettings => valueOf(parseTenant(yaml, "tenants/t.yaml"));
const reviewer = valueOf(parseAgent(example("agents/acme-reviewer.yaml"), "agents/acme-reviewer.yaml"));
const batch = valueOf(parseAgent(example("agents/acme-batch.yaml"), "agents/acme-batch.yaml"));
const defaultTenant = valueOf(parseTenant(example("tenants/default.yaml"), "tenants/default.yaml"));
const HOUR = 3_600_000;

describe("resolveTreeLimits", () => {
  it("LIM-4 a tree limit left out takes the tenant's, then the default", () => {
    const limits = resolveTreeLimits(agent("limits: {tree: {depth: 4}}\n"), tenant("limits: {tree: {fan_out: 7}}\n"));
    expect(limits).toEqual({ model_calls: null, tokens: null, children: 500, fan_out: 7, depth: 4, wait: null });
  });

  it("LIM-4 a tree limit set to 0, or an empty wait, takes the tenant's", () => {
    const limits = resolveTreeLimits(agent("limits: {tree: {fan_out: 0, wait: ''}}\n"), tenant("limits: {tree: {fan_out: 7, wait: 2h}}\n"));
    expect(limits.fan_out).toBe(7);
    expect(limits.wait).toBe(2 * HOUR);
  });

  it("LIM-4 -1 or none removes the limit, though the tenant or the default set one", () => {
    const limits = resolveTreeLimits(batch, defaultTenant);
    expect(limits.fan_out).toBeNull();
    expect(limits.wait).toBeNull();
    expect(resolveTreeLimits(agent("limits: {tree: {depth: -1}}\n"), undefined).depth).toBeNull();
  });

  it("LIM-4 a tenant's -1 removes the default, and the agent's value is over the tenant's", () => {
    const t = tenant("limits: {tree: {children: -1, depth: 20}}\n");
    expect(resolveTreeLimits(undefined, t)).toMatchObject({ children: null, depth: 20 });
    expect(resolveTreeLimits(agent("limits: {tree: {children: 40}}\n"), t).children).toBe(40);
  });

  it("LIM-4 defaults are children 500, fan_out 100, depth 10 and the rest none", () => {
    expect(resolveTreeLimits(undefined, undefined)).toEqual({ model_calls: null, tokens: null, children: 500, fan_out: 100, depth: 10, wait: null });
  });

  it("LIM-4 the example agents resolve over the example tenant as the seed describes", () => {
    expect(resolveTreeLimits(reviewer, defaultTenant)).toEqual({ model_calls: 500, tokens: 2_000_000, children: 40, fan_out: 5, depth: 3, wait: 8 * HOUR });
    expect(resolveTreeLimits(batch, defaultTenant)).toEqual({ model_calls: null, tokens: null, children: 500, fan_out: null, depth: 10, wait: null });
  });

  it("LIM-4 each limit is the first level that sets one, for any settings", () => {
    const setting: fc.Arbitrary<LimitSetting | undefined> = fc.oneof(fc.constant(undefined), fc.constant<LimitSetting>("none"), fc.constant(0), fc.constant(-1), fc.integer({ min: 1, max: 1e9 }));
    const tree = fc.record({ model_calls: setting, children: setting, wait: setting }) as fc.Arbitrary<TreeLimitSettings>;
    const expected = (a: LimitSetting | undefined, t: LimitSetting | undefined, d: number | null): number | null => {
      for (const s of [a, t]) {
        if (s === "none" || s === -1) return null;
        if (typeof s === "number" && s > 0) return s;
      }
      return d;
    };
    fc.assert(
      fc.property(tree, tree, (a, t) => {
        const limits = resolveTreeLimits({ limits: { tree: a } }, { limits: { tree: t } });
        return (
          limits.model_calls === expected(a.model_calls, t.model_calls, null) &&
          limits.children === expected(a.children, t.children, 500) &&
          limits.wait === expected(a.wait, t.wait, null)
        );
      }),
    );
  });
});

describe("resolveLoopSettings", () => {
  it("LOOP-2 LOOP-3 LOOP-4 defaults are repeats 3, cycles 2 and no_progress 5", () => {
    expect(resolveLoopSettings(undefined, undefined)).toEqual({ repeats: 3, cycles: 2, no_progress: 5, on_loop: "wait", loop_deadline: null, escalation: [] });
  });

  it("LOOP-2 LOOP-4 the agent's thresholds are over the tenant's", () => {
    expect(resolveLoopSettings(reviewer, defaultTenant)).toEqual({ repeats: 4, cycles: 3, no_progress: 6, on_loop: "wait", loop_deadline: HOUR, escalation: [] });
  });

  it("LOOP-5 on_loop defaults to wait, under the tenant's deadline", () => {
    const settings = resolveLoopSettings(agent("loops: {repeats: 5}\n"), tenant("loop_deadline: 15m\n"));
    expect(settings.on_loop).toBe("wait");
    expect(settings.loop_deadline).toBe(15 * 60_000);
  });

  it("LOOP-6 the agent's stop or report is over the tenant's", () => {
    expect(resolveLoopSettings(agent("on_loop: stop\n"), tenant("on_loop: report\n")).on_loop).toBe("stop");
    expect(resolveLoopSettings(agent("on_loop: report\n"), tenant("on_loop: stop\n")).on_loop).toBe("report");
    expect(resolveLoopSettings(agent("name: a\n"), tenant("on_loop: stop\n")).on_loop).toBe("stop");
  });

  it("LOOP-8 a harness session's loop is reported unless the agent or the tenant sets on_loop", () => {
    expect(resolveLoopSettings(agent("name: a\n"), tenant("id: t\n"), { harness: true }).on_loop).toBe("report");
    expect(resolveLoopSettings(agent("name: a\n"), tenant("on_loop: wait\n"), { harness: true }).on_loop).toBe("wait");
    expect(resolveLoopSettings(agent("on_loop: stop\n"), tenant("id: t\n"), { harness: true }).on_loop).toBe("stop");
  });
});

describe("resolveOffloadThreshold", () => {
  const ceiling = tenant("offload: {default: 6000, ceiling: 20000}\n");

  it("OFF-13 the agent's offload wins within the tenant's ceiling", () => {
    expect(resolveOffloadThreshold(agent("offload: 12000\n"), ceiling)).toBe(12_000);
    expect(resolveOffloadThreshold(agent("offload: 50k\n"), ceiling)).toBe(20_000);
  });

  it("OFF-13 an agent's off becomes the ceiling, and stays off without one", () => {
    expect(resolveOffloadThreshold(batch, defaultTenant)).toBe(20_000);
    expect(resolveOffloadThreshold(batch, tenant("offload: {default: 6000}\n"))).toBe("off");
  });

  it("OFF-13 an agent that sets none takes the tenant's default, else 10,000 tokens", () => {
    expect(resolveOffloadThreshold(reviewer, defaultTenant)).toBe(6_000);
    expect(resolveOffloadThreshold(reviewer, tenant("id: t\n"))).toBe(10_000);
    expect(resolveOffloadThreshold(undefined, undefined)).toBe(10_000);
    expect(resolveOffloadThreshold(reviewer, tenant("offload: {ceiling: 8000}\n"))).toBe(8_000);
  });

  it("OFF-13 a tenant default of -1 means off, which a ceiling also bounds", () => {
    expect(resolveOffloadThreshold(reviewer, tenant("offload: {default: -1}\n"))).toBe("off");
    expect(resolveOffloadThreshold(reviewer, { offload: { default: -1 as number } })).toBe("off");
    expect(resolveOffloadThreshold(reviewer, tenant("offload: {default: off, ceiling: 9000}\n"))).toBe(9_000);
  });

  it("OFF-13 the threshold never passes the tenant's ceiling, whatever the settings", () => {
    const tokensOrOff = fc.oneof(fc.constant<"off">("off"), fc.integer({ min: 1, max: 1e7 }));
    fc.assert(
      fc.property(fc.option(tokensOrOff, { nil: undefined }), fc.option(tokensOrOff, { nil: undefined }), fc.integer({ min: 1, max: 1e7 }), (mine, theirs, top) => {
        const threshold = resolveOffloadThreshold({ offload: mine }, { offload: { default: theirs, ceiling: top } });
        return threshold !== "off" && threshold <= top;
      }),
    );
  });

  it("OFF-14 the default threshold is above the largest default budget, so a default-fitted answer stays inline", () => {
    expect(DEFAULT_OFFLOAD_TOKENS).toBeGreaterThan(8_000);
  });
});

describe("job limits, delegation, budget and spend", () => {
  it("LIM-1 max_steps defaults to 50 and the other job limits to none", () => {
    expect(resolveJobLimits(agent("name: a\n"))).toEqual({ max_steps: 50, max_tokens: null, timeout: null, max_cost_usd: null, max_output_tokens: null, reserve: "last_call" });
    expect(resolveJobLimits(reviewer)).toEqual({ max_steps: 20, max_tokens: 200_000, timeout: 600_000, max_cost_usd: 2, max_output_tokens: 4_000, reserve: "last_call" });
  });

  it("LIM-1 a session times out after 2h unless its agent says otherwise, none included", () => {
    expect(resolveJobLimits(agent("name: a\n"), { session: true }).timeout).toBe(2 * HOUR);
    expect(resolveJobLimits(agent("limits: {timeout: none}\n"), { session: true }).timeout).toBeNull();
    expect(resolveJobLimits(agent("limits: {timeout: 90s}\n"), { session: true }).timeout).toBe(90_000);
  });

  it("LIM-6 delegation.max_depth defaults to 1 and max_children to none", () => {
    expect(resolveDelegation(agent("name: a\n"))).toEqual({ allow: [], max_depth: 1, max_children: null });
    expect(resolveDelegation(agent("delegation: {allow: [b], max_depth: 0, max_children: 0}\n"))).toEqual({ allow: ["b"], max_depth: 0, max_children: 0 });
  });

  it("LIM-7 on_budget waits when a person started the tree, else fails, unless the agent says", () => {
    expect(resolveOnBudget(reviewer, { startedByPerson: true })).toBe("wait");
    expect(resolveOnBudget(reviewer, { startedByPerson: false })).toBe("fail");
    expect(resolveOnBudget(batch, { startedByPerson: true })).toBe("fail");
  });

  it("LIM-11 on_unknown waits when a person started the tree, else fails, unless the agent says", () => {
    expect(resolveOnUnknown(reviewer, { startedByPerson: true })).toBe("wait");
    expect(resolveOnUnknown(reviewer, { startedByPerson: false })).toBe("fail");
    expect(resolveOnUnknown(agent("on_unknown: wait\n"), { startedByPerson: false })).toBe("wait");
  });

  it("LIM-8 spend thresholds are the agent's over the tenant's over 80%, 85%, 80% and 20 runs", () => {
    expect(resolveSpend(undefined, undefined)).toEqual({ warn_share: 0.8, soft_wall: 0.85, forecast: { chance: 0.8, min_runs: 20 } });
    const mine = agent("spend: {warn_share: 70%, forecast: {min_runs: 5}}\n");
    const theirs = tenant("spend: {warn_share: 60%, soft_wall: 90%, forecast: {chance: 50%}}\n");
    expect(resolveSpend(mine, theirs)).toEqual({ warn_share: 0.7, soft_wall: 0.9, forecast: { chance: 0.5, min_runs: 5 } });
  });
});
