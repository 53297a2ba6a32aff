import { describe, expect, it } from "vitest";
import { SCHEMA_NAMES } from "../../schemas/catalog.ts";
import { TOPICS, topicConfigs } from "../../topology/topics.ts";

describe("topology as data", () => {
  it("declares each topic once, with a known schema and at least one partition", () => {
    const names = TOPICS.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const t of TOPICS) {
      expect(SCHEMA_NAMES).toContain(t.schema);
      expect(t.partitions).toBeGreaterThan(0);
      expect(t.name).toMatch(/^oz0\.[a-z.-]+$/);
    }
  });

  it("keeps the config table compacted and forever, and everything else deleted by age", () => {
    for (const t of TOPICS) {
      const c = topicConfigs(t);
      if (t.name === "oz0.config") {
        expect(c["cleanup.policy"]).toBe("compact");
        expect(c["retention.ms"]).toBe("-1");
      } else {
        expect(c["cleanup.policy"]).toBe("delete");
        expect(Number(c["retention.ms"])).toBeGreaterThan(0);
      }
    }
  });

  it("keys tool calls and results by run, and model calls and jobs by tree", () => {
    const key = (n: string) => TOPICS.find((t) => t.name === n)?.key;
    expect(key("oz0.tool-calls")).toBe("run_id");
    expect(key("oz0.tool-results")).toBe("run_id");
    expect(key("oz0.model-calls")).toBe("tree_id");
    expect(key("oz0.jobs")).toBe("tree_id");
  });
});
