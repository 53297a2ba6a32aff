/**
 * Bad input (docs/reliability.md, "Bad input"): the string check of the serde against the real
 * registry, and the fuzz drill in a shorter form (3,000 hostile messages over the three
 * processors, each run as a worker process against the real services).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FUZZ_KINDS, fuzzDrill, kindsOf, type FuzzResult, type FuzzSubject } from "../../drills/fuzz.ts";
import type { Services } from "../../drills/lab.ts";
import { passed } from "../../drills/report.ts";
import { DecodeError } from "../../schemas/serde.ts";
import type { ToolCall } from "../../schemas/types.ts";
import { minioClient } from "../../store/objects.ts";
import { toolCall } from "../support/events.ts";
import { endpoints, kafka, serde } from "../support/kafka.ts";
import { redisClient } from "../../store/redis/client.ts";

let services: Services;

beforeAll(async () => {
  const e = endpoints();
  const k = kafka();
  const admin = k.admin();
  await admin.connect();
  services = { kafka: k, admin, serde: await serde(), redis: redisClient(e, { maxRetriesPerRequest: 3 }), minio: minioClient(e), endpoints: e };
});

afterAll(async () => {
  await services.admin.disconnect();
  services.redis.disconnect();
});

/** A ToolCall encoded with `field` holding a placeholder, whose bytes are then replaced by `bad`. */
function withBytes(field: keyof ToolCall, bad: Buffer): Buffer {
  const placeholder = "PLACEHOLDER-PLACEHOLDER".slice(0, bad.length);
  const encoded = services.serde.encode("ToolCall", toolCall({ [field]: placeholder }));
  const at = encoded.indexOf(placeholder);
  bad.copy(encoded, at);
  return encoded;
}

describe("invalid UTF-8 in a string field (SYS-1)", () => {
  it("SYS-1 refuses a string field holding invalid UTF-8 with a DecodeError naming the field", async () => {
    for (const bad of [Buffer.from([0xc3, 0x28]), Buffer.from([0xff]), Buffer.from([0x61, 0xed, 0xa0, 0x80])]) {
      const err = await services.serde.decode("ToolCall", withBytes("agent", bad)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DecodeError);
      expect((err as DecodeError).kind).toBe("undecodable");
      expect((err as DecodeError).message).toMatch(/^the string field agent of this ToolCall \(schema ID \d+\) is not valid UTF-8: .*encode the text as UTF-8/);
    }
  });

  it("SYS-1 accepts genuine U+FFFD text and other valid UTF-8 unchanged", async () => {
    const text = "a \uFFFD b, caf\u00e9, \u{1F600}";
    const call = toolCall({ agent: text, arguments: JSON.stringify({ q: "\uFFFD" }) });
    const decoded = await services.serde.decode<ToolCall>("ToolCall", services.serde.encode("ToolCall", call));
    expect(decoded.agent).toBe(text);
    expect(JSON.parse(decoded.arguments)).toEqual({ q: "\uFFFD" });
  });

  it("SYS-1 names the field when the bad bytes hide in an optional string of another event (ToolResult.content)", async () => {
    const { context_used: _c, spend_share: _s, ...call } = toolCall();
    const value = {
      ...call,
      is_error: false,
      content: "PLACEHOLDER",
      content_ref: null,
      size_bytes: 11,
      labels: [],
    };
    const encoded = services.serde.encode("ToolResult", value);
    Buffer.from([0x50, 0xc3, 0x28, 0xff]).copy(encoded, encoded.indexOf("PLACEHOLDER"));
    await expect(services.serde.decode("ToolResult", encoded)).rejects.toThrow(/the string field content of this ToolResult .* is not valid UTF-8/);
  });
});

describe("the fuzz drill, shorter: 3,000 hostile messages", () => {
  async function fuzz(subject: FuzzSubject): Promise<FuzzResult> {
    const lines: string[] = [];
    const result = await fuzzDrill(services, { subject, messages: 1_000, rate: 1_000, idleMs: 45_000, say: (l) => lines.push(l) });
    if (!passed(result.row)) console.error([...lines, JSON.stringify(result.row, null, 2)].join("\n"));
    return result;
  }

  function expectAllHandled(r: FuzzResult, subject: FuzzSubject): void {
    expect(r.row.inputs).toBe(1_000);
    expect(r.row.lost).toBe(0);
    expect(r.row.duplicated).toBe(0);
    expect([...r.kinds.keys()].sort()).toEqual(kindsOf(subject).sort());
    for (const [kind, k] of r.kinds) expect(k.ok, kind).toBe(k.sent);
    for (const [name, ok] of Object.entries(r.row.checks)) expect(ok, name).toBe(true);
    expect(r.wrong).toEqual([]);
    // Every reason says what is wrong, then (after a colon) why or what to do.
    for (const reason of r.reasons.keys()) expect(reason).toMatch(/^.{10,}: .{10,}/);
  }

  it("SYS-1 loop-calls: every hostile call dead-lettered with an actionable reason, a read of another tenant's ref allowed (read-result answers not found), the worker alive", async () => {
    const r = await fuzz("loop-calls");
    expectAllHandled(r, "loop-calls");
    const refs = r.kinds.get("other-tenant-ref");
    expect(r.row.answers).toBe(refs?.sent);
    expect(r.row.deadLettered).toBe(1_000 - (refs?.sent ?? 0));
  }, 300_000);

  it("SYS-1 LIM-1 limits-model-calls: negative tokens, empty IDs and wire-level garbage all dead-lettered, the worker alive", async () => {
    const r = await fuzz("limits-model-calls");
    expectAllHandled(r, "limits-model-calls");
    expect(r.row.deadLettered).toBe(1_000);
  }, 300_000);

  it("SYS-1 FILE-2 fit-results: 10 MB and 100,000-deep arguments, invalid UTF-8 and another tenant's ref dead-lettered, no dead letter above its topic's limit", async () => {
    const r = await fuzz("fit-results");
    expectAllHandled(r, "fit-results");
    expect(r.row.deadLettered).toBe(1_000);
    expect(r.kinds.get("arguments-10mb")?.ok).toBe(3);
    expect([...r.kinds.keys()].sort()).toEqual([...FUZZ_KINDS].sort());
  }, 300_000);
});
