/**
 * Avro in the Confluent wire format (magic byte 0, a 4-byte schema ID, the Avro body), with
 * schemas held in a Confluent-compatible registry (SYS-1).
 *
 * Decoding resolves the writer's schema (fetched by ID, then cached) to this build's reader
 * schema, so an event written by an older or newer producer reads as the shape this code
 * expects, as long as the two are BACKWARD compatible.
 */
import { SchemaRegistry, SchemaType } from "@kafkajs/confluent-schema-registry";
import avro from "avsc";
import { allSchemas, schema, schemaViolations, type SchemaName } from "./catalog.ts";
import type { DeadLetterError } from "./types.ts";

const MAGIC = 0;
const HEADER = 5;

/** An input that can never be decoded, however often it is retried. */
export class DecodeError extends Error {
  readonly retriable = false;
  readonly kind: DeadLetterError;
  constructor(kind: DeadLetterError, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "DecodeError";
    this.kind = kind;
  }
}

/** The registry could not be reached or failed; trying again later can help. */
export class RegistryUnavailable extends Error {
  readonly retriable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
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

  readonly options: SerdeOptions;

  constructor(options: SerdeOptions) {
    this.options = options;
    this.registry = new SchemaRegistry({ host: options.registryUrl, retry: { retries: 2 } });
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
      throw new RegistryUnavailable(`registering ${entry.subject} at ${this.options.registryUrl} failed: ${detail}`, { cause: err });
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
    const body = schema(name).type.toBuffer(value);
    const out = Buffer.allocUnsafe(HEADER + body.length);
    out.writeUInt8(MAGIC, 0);
    out.writeUInt32BE(id, 1);
    body.copy(out, HEADER);
    return out;
  }

  /**
   * Decodes a wire-format message as `name`. Throws DecodeError for input that will never
   * decode (wrong magic byte, unknown schema ID, a schema that cannot be read as `name`,
   * a corrupt body) and RegistryUnavailable when the writer's schema cannot be fetched now.
   */
  async decode<T>(name: SchemaName, buf: Buffer | null): Promise<T> {
    if (!buf || buf.length === 0) throw new DecodeError("undecodable", `empty message: expected an Avro-encoded ${name}`);
    if (buf.length < HEADER || buf.readUInt8(0) !== MAGIC) {
      throw new DecodeError(
        "undecodable",
        `not in the Confluent wire format (magic byte ${buf.length > 0 ? buf.readUInt8(0) : "missing"}, expected 0): publish ${name} events Avro-encoded through the schema registry`,
      );
    }
    const id = buf.readUInt32BE(1);
    const writer = await this.writerType(id, name);
    const reader = schema(name).type;
    const resolver = this.resolver(id, name, writer, reader);
    try {
      return reader.fromBuffer(buf.subarray(HEADER), resolver, true) as T;
    } catch (err) {
      throw new DecodeError("undecodable", `the Avro body does not decode with schema ID ${id} as ${name}: ${(err as Error).message}`, { cause: err });
    }
  }

  private async writerType(id: number, name: SchemaName): Promise<avro.Type> {
    const known = this.writers.get(id);
    if (known) return known;
    let fetched: unknown;
    try {
      fetched = await this.registry.getSchema(id);
    } catch (err) {
      const status = httpStatus(err);
      if (status === 404) {
        throw new DecodeError("unknown_schema", `schema ID ${id} is not in the registry at ${this.options.registryUrl}: the producer used another registry, or the message is corrupt`, { cause: err });
      }
      throw new RegistryUnavailable(`fetching schema ID ${id} for a ${name} from ${this.options.registryUrl} failed: ${(err as Error).message}`, { cause: err });
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
        throw new DecodeError("wrong_schema", `schema ID ${id} (${writer.name ?? "unnamed"}) cannot be read as ${name}: ${(err as Error).message}`, { cause: err });
      }
      this.resolvers.set(key, resolver);
    }
    return resolver;
  }
}
