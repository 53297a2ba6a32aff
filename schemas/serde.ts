/**
 * Avro in the Confluent wire format (magic byte 0, a 4-byte schema ID, the Avro body), with
 * schemas held in a Confluent-compatible registry (SYS-1).
 *
 * Decoding resolves the writer's schema (fetched by ID, then cached) to this build's reader
 * schema, so an event written by an older or newer producer reads as the shape this code
 * expects, as long as the two are BACKWARD compatible.
 */
import { isUtf8 } from "node:buffer";
import { SchemaRegistry, SchemaType } from "@kafkajs/confluent-schema-registry";
import avro from "avsc";
import { redactUrl } from "../lib/redact.ts";
import { allSchemas, schema, schemaViolations, type SchemaName } from "./catalog.ts";
import type { DeadLetterError } from "./types.ts";
import { Oz0Error } from "../lib/errors.ts";

const MAGIC = 0;
const HEADER = 5;
/** How long, and for how many IDs, the registry's "no such schema" is remembered. */
const MISSING_ID_TTL_MS = 60_000;
const MISSING_IDS_KEPT = 4_096;
/** The largest encoding buffer a Serde keeps for reuse; a larger output is encoded into its own buffer. */
const SCRATCH_MAX_BYTES = 1024 * 1024;

/** An input that can never be decoded, however often it is retried. */
export class DecodeError extends Oz0Error {
  readonly kind: DeadLetterError;
  constructor(kind: DeadLetterError, message: string, options?: { cause?: unknown }) {
    super(message, { ...options, retriable: false });
    this.name = "DecodeError";
    this.kind = kind;
  }
}

/** The registry could not be reached or failed; trying again later can help. */
export class RegistryUnavailable extends Oz0Error {
  declare readonly retriable: true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { ...options, retriable: true, dependency: "registry" });
    this.name = "RegistryUnavailable";
  }
}

export interface SerdeOptions {
  /** Base URL of the Confluent-compatible API, such as `http://127.0.0.1:18081/apis/ccompat/v7`. */
  registryUrl: string;
}

function httpStatus(err: unknown): number | undefined {
  if (err && typeof err === "object" && "status" in err && typeof err.status === "number") return err.status;
  return undefined;
}

export class Serde {
  readonly registry: SchemaRegistry;
  private readonly ids = new Map<SchemaName, number>();
  private readonly writers = new Map<number, avro.Type>();
  private readonly resolvers = new Map<string, avro.Resolver>();
  /** Schema IDs the registry said it does not have, until when that answer is trusted. */
  private readonly missing = new Map<number, number>();
  /** Per writer schema ID: the same schema with every string read as UTF-8-checked bytes. */
  private readonly checkers = new Map<number, avro.Type>();
  /** Where outputs are encoded, after the wire header, before being copied out at their size. */
  private scratch = Buffer.allocUnsafe(64 * 1024);

  readonly options: SerdeOptions;

  constructor(options: SerdeOptions) {
    this.options = options;
    this.registry = new SchemaRegistry({ host: options.registryUrl, retry: { retries: 2 } });
  }

  /** An error text without the registry URL's password (the client may quote the URL). */
  private scrub(text: string): string {
    let url: URL;
    try {
      url = new URL(this.options.registryUrl);
    } catch {
      return text;
    }
    const secrets = [url.password, decodeURIComponent(url.password)].filter((s) => s !== "");
    return secrets.reduce((t, s) => t.split(s).join("***"), text.split(this.options.registryUrl).join(redactUrl(this.options.registryUrl)));
  }

  /**
   * Registers every schema of the catalog under its record-name subject with BACKWARD
   * compatibility. Idempotent: the same content gets the same ID again. A change that breaks
   * compatibility is refused by the registry and surfaces here as an error naming the schema.
   */
  async registerAll(): Promise<Map<SchemaName, number>> {
    for (const entry of allSchemas()) await this.register(entry.name);
    return new Map(this.ids);
  }

  async register(name: SchemaName, json = schema(name).json): Promise<number> {
    const entry = schema(name);
    try {
      const { id } = await this.registry.register(
        { type: SchemaType.AVRO, schema: JSON.stringify(json) },
        { subject: entry.subject },
      );
      if (json === entry.json) this.ids.set(name, id);
      this.writers.set(id, avro.Type.forSchema(json));
      return id;
    } catch (err) {
      const status = httpStatus(err);
      const detail = err instanceof Error ? err.message : String(err);
      if (status === 409 || /RuleViolation|incompatible/i.test(detail)) {
        throw new Error(`schema ${entry.subject} is not BACKWARD compatible with the registered versions: ${detail}`, { cause: err });
      }
      throw new RegistryUnavailable(`registering ${entry.subject} at ${redactUrl(this.options.registryUrl)} failed: ${this.scrub(detail)}`, { cause: err });
    }
  }

  /** Encodes a value with this build's schema; a value that does not fit says which fields. */
  encode(name: SchemaName, value: unknown): Buffer {
    const problems = schemaViolations(name, value);
    if (problems.length > 0) throw new Error(`${name} does not fit its schema: ${problems.join("; ")}`);
    return this.encodeChecked(name, value);
  }

  /**
   * Encodes a value already known to fit `name` (the runner checks every output against its
   * schema before it encodes it): the check is not made twice on the hot path.
   */
  encodeChecked(name: SchemaName, value: unknown): Buffer {
    const id = this.ids.get(name);
    if (id === undefined) throw new Error(`schema ${name} is not registered yet: call registerAll() at start`);
    const type = schema(name).type;
    // Encoded once into a buffer kept for the purpose, then copied out at its size: one
    // allocation and one copy per output, where toBuffer makes two of each.
    const end = type.encode(value, this.scratch, HEADER);
    let out: Buffer;
    if (end > 0) {
      out = Buffer.allocUnsafe(end);
      this.scratch.copy(out, HEADER, HEADER, end);
    } else {
      // Too small: `end` is minus the bytes missing. Encoded again at its exact size.
      const size = this.scratch.length - end;
      out = Buffer.allocUnsafe(size);
      if (type.encode(value, out, HEADER) !== size) throw new Error(`${name} encoded to a different size twice: the value changed while it was encoded`);
      if (size <= SCRATCH_MAX_BYTES) this.scratch = Buffer.allocUnsafe(Math.min(SCRATCH_MAX_BYTES, Math.max(size, 2 * this.scratch.length)));
    }
    out.writeUInt8(MAGIC, 0);
    out.writeUInt32BE(id, 1);
    return out;
  }

  /**
   * Decodes a wire-format message as `name`. Throws DecodeError for input that will never
   * decode (wrong magic byte, unknown schema ID, a schema that cannot be read as `name`,
   * a corrupt body) and RegistryUnavailable when the writer's schema cannot be fetched now.
   */
  async decode<T>(name: SchemaName, buf: Buffer | null): Promise<T> {
    const id = wireSchemaId(name, buf);
    const writer = this.writers.get(id) ?? (await this.writerType(id, name));
    return this.decodeWith<T>(name, buf as Buffer, id, writer);
  }

  /**
   * `decode` without waiting, for a message whose writer's schema is known already (every
   * message after the first of its schema): the value, or `WRITER_NOT_KNOWN` when the schema
   * must be fetched first, by `decode`. Throws as `decode` does. A batch's records decode
   * here one after the other with no promise or turn of the event loop each.
   */
  decodeKnown<T>(name: SchemaName, buf: Buffer | null): T | typeof WRITER_NOT_KNOWN {
    const id = wireSchemaId(name, buf);
    const writer = this.writers.get(id);
    return writer === undefined ? WRITER_NOT_KNOWN : this.decodeWith<T>(name, buf as Buffer, id, writer);
  }

  private decodeWith<T>(name: SchemaName, buf: Buffer, id: number, writer: avro.Type): T {
    const reader = schema(name).type;
    const resolver = this.resolver(id, name, writer, reader);
    let value: T;
    try {
      value = reader.fromBuffer(buf.subarray(HEADER), resolver, true) as T;
    } catch (err) {
      throw new DecodeError("undecodable", `the Avro body does not decode with schema ID ${id} as ${name} (${(err as Error).message}): the message is cut or corrupt; publish the event again as its producer encoded it`, { cause: err });
    }
    // avsc reads invalid UTF-8 as U+FFFD without a word; only then are the string bytes checked.
    if (holdsReplacementChar(value)) {
      const field = invalidUtf8Field(this.utf8Checker(id, writer), buf.subarray(HEADER));
      if (field !== null) {
        throw new DecodeError("undecodable", `the string field ${field} of this ${name} (schema ID ${id}) is not valid UTF-8: Avro strings are UTF-8; encode the text as UTF-8, or send binary data as a file`);
      }
    }
    return value;
  }

  private utf8Checker(id: number, writer: avro.Type): avro.Type {
    let checker = this.checkers.get(id);
    if (!checker) {
      checker = avro.Type.forSchema(stringsAsCheckedBytes(writer.schema()) as avro.Schema, { logicalTypes: { [UTF8_CHECK]: Utf8CheckedBytes } });
      this.checkers.set(id, checker);
    }
    return checker;
  }

  private async writerType(id: number, name: SchemaName): Promise<avro.Type> {
    const known = this.writers.get(id);
    if (known) return known;
    const unknown = `schema ID ${id} is not in the registry at ${redactUrl(this.options.registryUrl)}: the producer used another registry, or the message is corrupt; publish through the registry the pipeline reads`;
    if ((this.missing.get(id) ?? 0) > Date.now()) throw new DecodeError("unknown_schema", unknown);
    let fetched: unknown;
    try {
      fetched = await this.registry.getSchema(id);
    } catch (err) {
      const status = httpStatus(err);
      if (status === 404) {
        // A flood of one wrong ID costs one lookup a minute, not one per message.
        this.missing.delete(id);
        this.missing.set(id, Date.now() + MISSING_ID_TTL_MS);
        if (this.missing.size > MISSING_IDS_KEPT) this.missing.delete(this.missing.keys().next().value as number);
        throw new DecodeError("unknown_schema", unknown, { cause: err });
      }
      throw new RegistryUnavailable(`fetching schema ID ${id} for a ${name} from ${redactUrl(this.options.registryUrl)} failed: ${this.scrub((err as Error).message)}`, { cause: err });
    }
    // The registry client hands back an avsc type (or a wrapper holding its schema).
    const type = fetched instanceof avro.Type ? fetched : avro.Type.forSchema((fetched as { schema?: avro.Schema }).schema ?? (fetched as avro.Schema));
    this.writers.set(id, type);
    return type;
  }

  private resolver(id: number, name: SchemaName, writer: avro.Type, reader: avro.Type): avro.Resolver {
    const key = `${id}:${name}`;
    let resolver = this.resolvers.get(key);
    if (!resolver) {
      try {
        resolver = reader.createResolver(writer);
      } catch (err) {
        throw new DecodeError("wrong_schema", `schema ID ${id} (${writer.name ?? "unnamed"}) cannot be read as ${name} (${(err as Error).message}): publish only ${name} events, in a schema BACKWARD compatible with it, to this topic`, { cause: err });
      }
      this.resolvers.set(key, resolver);
    }
    return resolver;
  }
}

/*
 * Invalid UTF-8 in a string field (SYS-1). Avro encodes a string and bytes alike (a length,
 * then the bytes), so the writer's schema with every `string` turned into bytes reads the same
 * body and hands back each string's raw bytes, which are checked here. The hot path pays for a
 * walk of the decoded value only; the second decode happens when a U+FFFD shows up, which is
 * either genuine text (accepted) or the mark of a bad sequence (refused).
 */
const UTF8_CHECK = "oz0-utf8-check";
const NOT_UTF8: unique symbol = Symbol("not UTF-8");

class Utf8CheckedBytes extends avro.types.LogicalType {
  protected override _fromValue(val: Buffer): unknown {
    return isUtf8(val) ? 0 : NOT_UTF8;
  }
  protected override _toValue(val: unknown): unknown {
    return val;
  }
}

function stringsAsCheckedBytes(s: unknown): unknown {
  const checked = { type: "bytes", logicalType: UTF8_CHECK };
  if (s === "string") return checked;
  if (Array.isArray(s)) return s.map(stringsAsCheckedBytes);
  if (s === null || typeof s !== "object") return s;
  const o = s as Record<string, unknown>;
  if (o.type === "string") return checked;
  const out: Record<string, unknown> = { ...o };
  if (typeof o.type === "object") out.type = stringsAsCheckedBytes(o.type);
  if (Array.isArray(o.fields)) out.fields = (o.fields as Array<Record<string, unknown>>).map(({ default: _default, ...f }) => ({ ...f, type: stringsAsCheckedBytes(f.type) }));
  if (o.items !== undefined) out.items = stringsAsCheckedBytes(o.items);
  if (o.values !== undefined) out.values = stringsAsCheckedBytes(o.values);
  return out;
}

/** What `Serde.decodeKnown` answers when the writer's schema must be fetched first. */
export const WRITER_NOT_KNOWN: unique symbol = Symbol("writer schema not known yet");

/** The schema ID of a message in the Confluent wire format; DecodeError for anything else. */
function wireSchemaId(name: SchemaName, buf: Buffer | null): number {
  if (!buf || buf.length === 0) throw new DecodeError("undecodable", `empty message (no value): publish ${name} events Avro-encoded through the schema registry`);
  if (buf.length < HEADER || buf.readUInt8(0) !== MAGIC) {
    throw new DecodeError(
      "undecodable",
      `not in the Confluent wire format (magic byte ${buf.length > 0 ? buf.readUInt8(0) : "missing"}, expected 0): publish ${name} events Avro-encoded through the schema registry`,
    );
  }
  return buf.readUInt32BE(1);
}

function holdsReplacementChar(v: unknown): boolean {
  if (typeof v === "string") return v.includes("\uFFFD");
  if (v === null || typeof v !== "object" || Buffer.isBuffer(v)) return false;
  for (const x of Array.isArray(v) ? v : Object.values(v)) if (holdsReplacementChar(x)) return true;
  return false;
}

/** The path of the first string field whose bytes are not UTF-8, or null when all are. */
function invalidUtf8Field(checker: avro.Type, body: Buffer): string | null {
  let value: unknown;
  try {
    value = checker.fromBuffer(body, undefined, true);
  } catch {
    return null;
  }
  const find = (v: unknown, path: string): string | null => {
    if (v === NOT_UTF8) return path || "(the value)";
    if (v === null || typeof v !== "object" || Buffer.isBuffer(v)) return null;
    for (const [k, x] of Array.isArray(v) ? v.entries() : Object.entries(v)) {
      const found = find(x, path ? `${path}.${String(k)}` : String(k));
      if (found !== null) return found;
    }
    return null;
  };
  return find(value, "");
}
