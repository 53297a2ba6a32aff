/**
 * Encryption at rest of stored files (OFF-10, FILE-6): envelope encryption with node:crypto.
 *
 * - The master secret is `OZ0_PAYLOAD_KEY` (base64 of 32 bytes). Without it, a fixed local
 *   development key is used and `development` says so; it protects nothing and must not be
 *   used for real tenants.
 * - Each tenant's payload key is derived from the master with HKDF-SHA256 (info
 *   `oz0 tenant payload key:<tenant>`): nothing to store, and a tenant's key opens only its
 *   own files. A KMS can replace `tenantKey` later without changing the sealed format, which
 *   names the master by a fingerprint.
 * - Each object gets a fresh random AES-256-GCM data key; the object's bytes are sealed with
 *   it, and it is wrapped with the tenant's key (AES-256-GCM too). Both are bound to the
 *   tenant and the ref as additional data, so an object copied to another tenant or name does
 *   not open.
 *
 * No key, wrapped or not, appears in an error, a log line or an inspected value.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes } from "node:crypto";
import { Oz0Error } from "../lib/errors.ts";

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const FINGERPRINT_BYTES = 8;
const MAGIC = Buffer.from("OZ0F1", "ascii");
/** magic | master fingerprint | wrap iv | wrap tag | wrapped data key | data iv | data tag. */
const HEADER_BYTES = MAGIC.length + FINGERPRINT_BYTES + IV_BYTES + TAG_BYTES + KEY_BYTES + IV_BYTES + TAG_BYTES;
/** Added to every sealed object. */
export const SEAL_OVERHEAD = HEADER_BYTES;

/** LOCAL DEVELOPMENT ONLY: the key used when OZ0_PAYLOAD_KEY is not set. Not a secret. */
const DEVELOPMENT_KEY = createHash("sha256").update("oz0 LOCAL DEVELOPMENT payload key: public, never for real tenants").digest();

/** A sealed object does not open: damaged, sealed for another tenant or name, or with another master key. */
export class SealError extends Oz0Error {
  constructor(message: string) {
    super(message, { retriable: false });
    this.name = "SealError";
  }
}

export class PayloadKeys {
  readonly #master: Buffer;
  readonly #fingerprint: Buffer;
  /** True when the master is the public local development key (OZ0_PAYLOAD_KEY unset). */
  readonly development: boolean;

  private constructor(master: Buffer, development: boolean) {
    this.#master = master;
    this.#fingerprint = createHmac("sha256", master).update("oz0 payload key fingerprint").digest().subarray(0, FINGERPRINT_BYTES);
    this.development = development;
  }

  /**
   * The master from `OZ0_PAYLOAD_KEY` (base64, 32 bytes), else the local development key.
   * A value that is set but malformed is refused (its value is never repeated).
   */
  static fromEnv(env: Record<string, string | undefined> = process.env): PayloadKeys {
    const given = env.OZ0_PAYLOAD_KEY;
    if (given === undefined || given === "") return new PayloadKeys(DEVELOPMENT_KEY, true);
    const master = Buffer.from(given, "base64");
    if (master.length !== KEY_BYTES || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(given.trim())) {
      throw new Error(`OZ0_PAYLOAD_KEY must be base64 of ${KEY_BYTES} random bytes (openssl rand -base64 32); the value given is not`);
    }
    return new PayloadKeys(master, false);
  }

  /** For tests: a master of exactly 32 bytes. */
  static fromMaster(master: Uint8Array): PayloadKeys {
    if (master.length !== KEY_BYTES) throw new Error(`a payload master key has ${KEY_BYTES} bytes`);
    return new PayloadKeys(Buffer.from(master), false);
  }

  private tenantKey(tenant: string): Buffer {
    return Buffer.from(hkdfSync("sha256", this.#master, "oz0 payload key v1", `oz0 tenant payload key:${tenant}`, KEY_BYTES));
  }

  /** Seals `plain` for a tenant, bound to `name` (the file's digest). */
  seal(tenant: string, name: string, plain: Buffer): Buffer {
    const aad = additionalData(tenant, name);
    const dataKey = randomBytes(KEY_BYTES);
    const wrapIv = randomBytes(IV_BYTES);
    const wrap = createCipheriv("aes-256-gcm", this.tenantKey(tenant), wrapIv).setAAD(aad);
    const wrapped = Buffer.concat([wrap.update(dataKey), wrap.final()]);
    const dataIv = randomBytes(IV_BYTES);
    const data = createCipheriv("aes-256-gcm", dataKey, dataIv).setAAD(aad);
    const body = Buffer.concat([data.update(plain), data.final()]);
    const out = Buffer.concat([MAGIC, this.#fingerprint, wrapIv, wrap.getAuthTag(), wrapped, dataIv, data.getAuthTag(), body]);
    dataKey.fill(0);
    return out;
  }

  /** Opens what `seal` made for the same tenant and name, or throws SealError. */
  open(tenant: string, name: string, sealed: Buffer): Buffer {
    if (sealed.length < HEADER_BYTES || !sealed.subarray(0, MAGIC.length).equals(MAGIC)) throw new SealError(`stored file ${name} of tenant ${tenant} is not in the sealed format`);
    let at = MAGIC.length;
    const take = (n: number): Buffer => sealed.subarray(at, (at += n));
    const fingerprint = take(FINGERPRINT_BYTES);
    if (!fingerprint.equals(this.#fingerprint)) throw new SealError(`stored file ${name} of tenant ${tenant} was sealed under another master payload key: set OZ0_PAYLOAD_KEY to the key it was stored with`);
    const wrapIv = take(IV_BYTES);
    const wrapTag = take(TAG_BYTES);
    const wrapped = take(KEY_BYTES);
    const dataIv = take(IV_BYTES);
    const dataTag = take(TAG_BYTES);
    const body = sealed.subarray(at);
    const aad = additionalData(tenant, name);
    try {
      const unwrap = createDecipheriv("aes-256-gcm", this.tenantKey(tenant), wrapIv).setAAD(aad).setAuthTag(wrapTag);
      const dataKey = Buffer.concat([unwrap.update(wrapped), unwrap.final()]);
      const data = createDecipheriv("aes-256-gcm", dataKey, dataIv).setAAD(aad).setAuthTag(dataTag);
      const plain = Buffer.concat([data.update(body), data.final()]);
      dataKey.fill(0);
      return plain;
    } catch {
      // The cause (an authentication failure) carries nothing useful and is not kept.
      throw new SealError(`stored file ${name} of tenant ${tenant} does not open: it is damaged or was sealed for another tenant or name`);
    }
  }

  toJSON(): string {
    return "[PayloadKeys]";
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return `PayloadKeys { development: ${this.development} }`;
  }
}

function additionalData(tenant: string, name: string): Buffer {
  return Buffer.from(`oz0-file/1\n${tenant}\n${name}`, "utf8");
}
