import { describe, expect, it } from "vitest";
import { unmatchedEarly, type Output } from "../../drills/lab.ts";

const out = (id: string, verdict: string, offset = "0"): Output => ({ topic: "t", partition: 0, offset, inputId: `in-${id}`, deadLetter: false, value: { id, input_id: `in-${id}`, verdict, ts: Number(offset) } });

describe("SYS-1 the drills' check of answers taken before their commit", () => {
  it("passes answers that were committed as read, whatever their timestamps", () => {
    expect(unmatchedEarly([out("a", "allow", "1"), out("a", "allow", "2"), out("b", "stop")], [out("a", "allow", "3"), out("b", "stop")])).toBe(0);
  });

  it("counts an answer read early that was never committed, or was committed with other content", () => {
    expect(unmatchedEarly([out("a", "allow"), out("c", "allow")], [out("a", "allow")])).toBe(1);
    expect(unmatchedEarly([out("a", "allow")], [out("a", "stop")])).toBe(1);
  });
});
