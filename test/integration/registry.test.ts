import { describe, expect, it } from "vitest";
import { SchemaRegistry, SchemaType } from "@kafkajs/confluent-schema-registry";
import { SCHEMA_NAMES } from "../../schemas/catalog.ts";
import { DecodeError, Serde } from "../../schemas/serde.ts";
import type { ToolCall } from "../../schemas/types.ts";
import { endpoints } from "../support/kafka.ts";
import { toolCall, uid } from "../support/events.ts";

describe("SYS-1 Avro events through the real schema registry", () => {
  it("SYS-1 registers every schema idempotently: the same content gets the same ID again", async () => {
    const a = await new Serde({ registryUrl: endpoints().registryUrl }).registerAll();
    const b = await new Serde({ registryUrl: endpoints().registryUrl }).registerAll();
    expect([...a.keys()].sort()).toEqual([...SCHEMA_NAMES].sort());
    expect([...b.entries()]).toEqual([...a.entries()]);
  });

  it("SYS-1 encodes in the Confluent wire format and decodes in a fresh client by schema ID", async () => {
    const writer = new Serde({ registryUrl: endpoints().registryUrl });
    const ids = await writer.registerAll();
    const call = toolCall({ context_used: 1234, spend_share: 0.5 });
    const bytes = writer.encode("ToolCall", call);
    expect(bytes.readUInt8(0)).toBe(0);
    expect(bytes.readUInt32BE(1)).toBe(ids.get("ToolCall"));
    const reader = new Serde({ registryUrl: endpoints().registryUrl });
    expect(await reader.decode<ToolCall>("ToolCall", bytes)).toEqual(call);
  });

  it("SYS-1 the registry refuses a schema change that breaks BACKWARD compatibility", async () => {
    const registry = new SchemaRegistry({ host: endpoints().registryUrl });
    const subject = uid("oz0.test.Compat");
    const v1 = { type: "record", name: "Compat", namespace: "oz0.test", fields: [{ name: "a", type: "string" }] };
    const v2ok = { ...v1, fields: [...v1.fields, { name: "b", type: "int", default: 0 }] };
    const v3bad = { ...v1, fields: [...v2ok.fields, { name: "c", type: "int" }] };
    await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v1) }, { subject });
    await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v2ok) }, { subject });
    await expect(registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v3bad) }, { subject })).rejects.toThrow();
  });

  it("tells undecodable input apart: wrong magic byte, unknown schema ID, a schema of another event", async () => {
    const s = new Serde({ registryUrl: endpoints().registryUrl });
    await s.registerAll();
    await expect(s.decode("ToolCall", Buffer.from("{\"json\":true}"))).rejects.toMatchObject({ kind: "undecodable" });
    const unknown = Buffer.from([0, 0x7f, 0xff, 0xff, 0xf0, 1, 2, 3]);
    const err = await s.decode("ToolCall", unknown).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DecodeError);
    expect((err as DecodeError).kind).toBe("unknown_schema");
    const decision = s.encode("ConfigRecord", { kind: "agent", id: "a", value: "{}", source: "", reason: null, ts: 1 });
    await expect(s.decode("ToolCall", decision)).rejects.toMatchObject({ kind: "wrong_schema" });
  });
});
