import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Correlator } from "../../client/correlator.ts";
import { READ_RESULT } from "../../client/read-result.ts";
import { ANSWERS, NoAnswer, noAnswerMessage, readResultCall } from "../../client/runtime-client.ts";
import { schemaViolations } from "../../schemas/catalog.ts";
import { TOPICS } from "../../topology/topics.ts";

describe("the runtime client's correlation", () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it("SYS-1 hands an answer to the await of its event's ID, whichever comes first", async () => {
    const c = new Correlator<string>();
    const waiting = c.wait("evt-1", 1_000, () => new Error("timeout"));
    expect(c.deliver("evt-2", "not mine")).toBe(false);
    expect(c.deliver("evt-1", "answer 1")).toBe(true);
    await expect(waiting).resolves.toBe("answer 1");

    // The answer came before anyone awaited it.
    await expect(c.wait("evt-2", 1_000, () => new Error("timeout"))).resolves.toBe("not mine");
    expect(c.keptCount).toBe(0);
    expect(c.awaited).toBe(0);
  });

  it("SYS-1 keeps the first answer to an event, forgets kept answers after their time and beyond the cap", async () => {
    let now = 0;
    const c = new Correlator<string>({ keepMs: 1_000, maxKept: 2, now: () => now });
    c.deliver("a", "first");
    c.deliver("a", "second");
    await expect(c.wait("a", 10, () => new Error("timeout"))).resolves.toBe("first");

    c.deliver("old", "x");
    now = 2_000;
    c.deliver("b", "y");
    c.deliver("c", "z");
    c.deliver("d", "w");
    expect(c.keptCount).toBe(2);
    const late = c.wait("old", 50, () => new Error("no answer to old"));
    const bGone = c.wait("b", 50, () => new Error("no answer to b"));
    vi.advanceTimersByTime(50);
    await expect(late).rejects.toThrow("no answer to old");
    await expect(bGone).rejects.toThrow("no answer to b");
    await expect(c.wait("d", 10, () => new Error("timeout"))).resolves.toBe("w");
  });

  it("SYS-1 rejects after the timeout with the error given, and an answer after it is kept, not lost", async () => {
    const c = new Correlator<string>();
    const waiting = c.wait("evt", 500, () => new NoAnswer("admission", "evt", 500));
    vi.advanceTimersByTime(499);
    expect(c.awaited).toBe(1);
    vi.advanceTimersByTime(1);
    await expect(waiting).rejects.toBeInstanceOf(NoAnswer);
    expect(c.deliver("evt", "late")).toBe(false);
    await expect(c.wait("evt", 10, () => new Error("x"))).resolves.toBe("late");
  });

  it("SYS-1 refuses a second await of one ID, and cancel and close reject what is awaited", async () => {
    const c = new Correlator<string>();
    const first = c.wait("evt", 1_000, () => new Error("timeout"));
    await expect(c.wait("evt", 1_000, () => new Error("timeout"))).rejects.toThrow(/already awaited/);
    c.cancel("evt", new Error("publish failed"));
    await expect(first).rejects.toThrow("publish failed");
    const a = c.wait("a", 1_000, () => new Error("timeout"));
    const b = c.wait("b", 1_000, () => new Error("timeout"));
    c.rejectAll((id) => new Error(`closed before ${id}`));
    await expect(a).rejects.toThrow("closed before a");
    await expect(b).rejects.toThrow("closed before b");
    expect(c.awaited).toBe(0);
  });
});

describe("the runtime client's answers and events", () => {
  it("SYS-4 says in NoAnswer what was awaited, on which topic, for how long, and what to check", () => {
    const e = new NoAnswer("admission", "evt-42", 1500);
    expect(e).toMatchObject({ name: "NoAnswer", retriable: true, awaited: "admission", topic: "oz0.admissions", inputId: "evt-42", timeoutMs: 1500 });
    expect(e.message).toBe(noAnswerMessage("admission", "evt-42", 1500));
    expect(e.message).toMatch(/an admission or refusal for event evt-42 did not come on oz0\.admissions within 1500 ms/);
    expect(e.message).toMatch(/limits-model-calls/);
    expect(new NoAnswer("delivered", "r", 10).message).toMatch(/a delivered result for event r did not come on oz0\.results-delivered within 10 ms/);
    // A stand-in for the pipeline (the load's passthrough) names the topic it awaited on.
    expect(new NoAnswer("admission", "e", 5, "no copy of e", "bench.out")).toMatchObject({ awaited: "admission", topic: "bench.out", message: "no copy of e" });
  });

  it("SYS-1 awaits each answer on a declared topic of the schema it decodes", () => {
    for (const a of Object.values(ANSWERS)) {
      const t = TOPICS.find((x) => x.name === a.topic);
      expect(t?.schema).toBe(a.schema);
    }
  });

  it("OFF-6 builds an oz.read_result call that fits the ToolCall schema, with the arguments as JSON", () => {
    const call = readResultCall({ tenant: "acme", tree_id: "t", job_id: "j", run_id: "r", agent: "acme-reviewer" }, { ref: "oz0-file:sha256:abc", range: "1-40" }, { id: "evt-1" });
    expect(call).toMatchObject({ id: "evt-1", ...READ_RESULT, origin: "model", context_used: null, spend_share: null });
    expect(JSON.parse(call.arguments)).toEqual({ ref: "oz0-file:sha256:abc", range: "1-40" });
    expect(schemaViolations("ToolCall", call)).toEqual([]);
  });
});
