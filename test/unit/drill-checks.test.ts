import { describe, expect, it } from "vitest";
import { unmatchedEarly, type Output } from "../../drills/lab.ts";
import { openSlots } from "../../drills/reshard.ts";

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

describe("SYS-3 the reshard drill's reading of a cluster check", () => {
  const report = (tail: string): string =>
    "\u001b[32;1m[OK] All nodes agree about slots configuration.\n\u001b[0m\u001b[29;1m>>> Check for open slots...\n" + tail + "\u001b[29;1m>>> Check slots coverage...\n\u001b[0m\u001b[32;1m[OK] All 16384 slots covered.\n";

  it("finds the slots a stopped migration left open, colours and all", () => {
    const open = report("\u001b[0m\u001b[31;1m[WARNING] Node 127.0.0.1:17002 has slots in importing state 15189.\n\u001b[0m\u001b[31;1m[WARNING] The following slots are open: 15189, 200.\n");
    expect(openSlots(open)).toEqual(["15189", "200"]);
  });

  it("finds none in a settled cluster's report", () => {
    expect(openSlots(report("\u001b[0m"))).toEqual([]);
  });
});
