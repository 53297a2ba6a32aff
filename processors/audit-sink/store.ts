/**
 * The audit log in MinIO: an append-only set of objects in a bucket created with object
 * locking, whose default retention (COMPLIANCE unless told otherwise) applies to every object
 * as it is written. Within the retention no one, the sink included, can delete an object's
 * version or shorten its retention; MinIO refuses.
 *
 * Writing: a batch's entries go to one object named by its topic, partition and offset range,
 * written only if no object of that name exists (`If-None-Match: *`). Before writing, the sink
 * lists the objects that start within the batch's offsets (an earlier attempt at the batch, or
 * a replay of it) and writes only what they do not cover, so a replay adds nothing.
 *
 * Reading: a versioned bucket lets anyone PUT a new version over a name or add a delete marker,
 * but never remove the first version within the retention. The reader therefore reads the first
 * version of every name, and reports names that gained versions or delete markers since.
 */
import type { Client, ObjectLockInfo } from "minio";
import type { AuditEvent } from "../../schemas/types.ts";
import { codeOf, minioCall, minioFailure } from "../../store/minio-errors.ts";
import { readBytes } from "../../store/objects.ts";
import { TransientError } from "../runner/errors.ts";
import { utcDay } from "../loops/store.ts";
import { DAY_ROOT, dayMarkers, decodeLines, encodeLines, listAfter, LOG_ROOT, objectName, parseDayMarker, parseObjectName, partitionPrefix, uncoveredRuns, type ObjectRange } from "./log-objects.ts";
import { Oz0Error } from "../../lib/errors.ts";

export type LockMode = "COMPLIANCE" | "GOVERNANCE";

export const DEFAULT_AUDIT_RETENTION_DAYS = 365;
const READ_CONCURRENCY = 8;

export interface AuditLogOptions {
  readonly client: Client;
  /** @default "oz0-audit" */
  readonly bucket?: string;
  /** COMPLIANCE: nobody, not even the root user, removes an object within its retention. @default "COMPLIANCE" */
  readonly mode?: LockMode;
  /** Whole days each object is locked for. @default DEFAULT_AUDIT_RETENTION_DAYS */
  readonly retentionDays?: number;
}

/** One input record of a batch, with the entry it gives the log, if any. */
export interface AuditRecord {
  readonly offset: string;
  readonly entry: AuditEvent | null;
}

export interface AuditRead {
  /** Every entry of every object's first version (duplicates of a rare double write included; see `selectEntries`). */
  readonly entries: AuditEvent[];
  readonly objects: number;
  /** Objects not read: the day index says they hold only entries of days before `since`. */
  readonly skipped: number;
  /** Names that gained a later version or a delete marker after they were written: someone tried to change the log. */
  readonly altered: string[];
  /** Objects under the log's names whose first version is not JSON lines of entries, with why: shown, never skipped silently. */
  readonly unreadable: string[];
}

export class AuditLogNotLocked extends Oz0Error {
  constructor(bucket: string) {
    super(`bucket ${bucket} has no object lock: the audit log needs a bucket created with object locking; name a new one with OZ0_AUDIT_BUCKET and it is created so`, { retriable: false });
    this.name = "AuditLogNotLocked";
  }
}

/** Objects at a batch's offsets hold other entries: the topic's offsets started again. Retrying cannot help. */
export class AuditLogConflict extends Oz0Error {
  constructor(bucket: string, name: string, missing: number) {
    super(
      `${bucket}/${name} is already written but lacks ${missing} of the entries this batch gives its offsets: the topic's offsets started again (topic created anew, or Kafka's data reset); the log cannot be changed, so point the sink at a new bucket with OZ0_AUDIT_BUCKET`,
      { retriable: false },
    );
    this.name = "AuditLogConflict";
  }
}

function transient<T>(what: string, run: () => Promise<T>): Promise<T> {
  return minioCall("the audit log", what, run);
}

async function text(stream: NodeJS.ReadableStream): Promise<string> {
  return (await readBytes(stream)).toString("utf8");
}

interface ListedVersion {
  readonly name: string;
  readonly versionId: string | null;
  readonly deleteMarker: boolean;
}

export class AuditLog {
  readonly client: Client;
  readonly bucket: string;
  readonly mode: LockMode;
  readonly retentionDays: number;

  constructor(opts: AuditLogOptions) {
    this.client = opts.client;
    this.bucket = opts.bucket ?? "oz0-audit";
    this.mode = opts.mode ?? "COMPLIANCE";
    this.retentionDays = opts.retentionDays ?? DEFAULT_AUDIT_RETENTION_DAYS;
    if (!Number.isInteger(this.retentionDays) || this.retentionDays < 1) throw new Error(`the audit log's retention is ${this.retentionDays} days: give a whole number of days, at least 1`);
  }

  /**
   * Creates the bucket with object locking when missing, refuses an existing one without it,
   * and sets its default retention (idempotent; a COMPLIANCE retention can be lengthened, not
   * shortened, so objects already written keep theirs).
   */
  async ensureBucket(): Promise<void> {
    if (!(await this.client.bucketExists(this.bucket))) {
      try {
        await this.client.makeBucket(this.bucket, "", { ObjectLocking: true });
      } catch (err) {
        if (!(await this.client.bucketExists(this.bucket))) throw err;
      }
    }
    // minio's typings list `void` overloads first; the calls without a callback return promises.
    const lockConfig = this.client.getObjectLockConfig(this.bucket) as unknown as Promise<ObjectLockInfo>;
    const lock = await lockConfig.catch((err: unknown) => {
      if (codeOf(err) === "ObjectLockConfigurationNotFoundError") return null;
      throw err;
    });
    if (!lock || !("objectLockEnabled" in lock) || lock.objectLockEnabled !== "Enabled") throw new AuditLogNotLocked(this.bucket);
    if (lock.mode !== this.mode || lock.unit !== "Days" || lock.validity !== this.retentionDays) {
      await (this.client.setObjectLockConfig(this.bucket, { mode: this.mode, unit: "Days", validity: this.retentionDays }) as unknown as Promise<void>);
    }
  }

  /** The objects of a partition that start within `first`..`last`, in offset order. */
  private async startingWithin(topic: string, partition: number, first: bigint, last: bigint): Promise<ObjectRange[]> {
    const prefix = partitionPrefix(topic, partition);
    const found: ObjectRange[] = [];
    await transient(`list ${prefix}`, async () => {
      for await (const item of this.client.listObjectsV2(this.bucket, prefix, false, listAfter(topic, partition, first))) {
        const range = parseObjectName((item as { name?: string }).name ?? "");
        if (!range) continue;
        if (range.first > last) break;
        found.push(range);
      }
    });
    return found;
  }

  /**
   * A stored object a replay relies on must hold the replay's entries of its range: otherwise
   * its offsets belong to another life of the topic (deleted and created again, or Kafka's data
   * reset) and skipping them would lose entries.
   */
  private async checkHolds(range: ObjectRange, records: readonly AuditRecord[]): Promise<void> {
    const wanted = records.filter((r) => r.entry !== null && BigInt(r.offset) >= range.first && BigInt(r.offset) <= range.last).map((r) => (r.entry as AuditEvent).id);
    if (wanted.length === 0) return;
    const name = objectName(range);
    const stored = new Set(decodeLines(await transient(`read ${name}`, async () => text(await this.client.getObject(this.bucket, name))), name).map((e) => e.id));
    const missing = wanted.filter((id) => !stored.has(id));
    if (missing.length > 0) throw new AuditLogConflict(this.bucket, name, missing.length);
  }

  /**
   * Appends a batch of one partition (records in offset order): the entries of the records no
   * stored object covers, one object per run of them. Returns the names written (or found
   * written by a concurrent attempt); none when everything was already stored.
   */
  async append(topic: string, partition: number, records: readonly AuditRecord[]): Promise<string[]> {
    const first = records[0];
    const last = records[records.length - 1];
    if (!first || !last || !records.some((r) => r.entry !== null)) return [];
    const stored = await this.startingWithin(topic, partition, BigInt(first.offset), BigInt(last.offset));
    for (const range of stored) await this.checkHolds(range, records);
    const names: string[] = [];
    for (const run of uncoveredRuns(records, stored)) {
      const entries = run.map((r) => r.entry).filter((e): e is AuditEvent => e !== null);
      const [from, to] = [run[0], run[run.length - 1]];
      if (!from || !to || entries.length === 0) continue;
      const range = { topic, partition, first: BigInt(from.offset), last: BigInt(to.offset) };
      const name = objectName(range);
      const body = encodeLines(entries);
      // The day index first: an object is there only with all its markers, so a reader since a day never skips it wrongly.
      await this.markDays(range, entries);
      try {
        await this.client.putObject(this.bucket, name, body, body.length, { "Content-Type": "application/x-ndjson", "If-None-Match": "*" });
      } catch (err) {
        // Another attempt at the same batch wrote it first: the log already holds these entries.
        if (codeOf(err) !== "PreconditionFailed") {
          const failure = minioFailure(err, `write ${name}`);
          throw failure !== err ? failure : new TransientError(`the audit log could not write ${name}: ${(err as Error).message ?? String(err)}`, { cause: err, dependency: "minio" });
        }
      }
      names.push(name);
    }
    return names;
  }

  /** Writes the object's day markers (empty, locked as the log is); one written before is left as it is. */
  private async markDays(range: ObjectRange, entries: readonly AuditEvent[]): Promise<void> {
    for (const marker of dayMarkers(range, entries)) {
      try {
        await this.client.putObject(this.bucket, marker, Buffer.alloc(0), 0, { "If-None-Match": "*" });
      } catch (err) {
        if (codeOf(err) !== "PreconditionFailed") {
          const failure = minioFailure(err, `write ${marker}`);
          throw failure !== err ? failure : new TransientError(`the audit log could not write ${marker}: ${(err as Error).message ?? String(err)}`, { cause: err, dependency: "minio" });
        }
      }
    }
  }

  /** The days each log object holds entries of, from the day index. */
  private async indexedDays(): Promise<Map<string, string[]>> {
    const days = new Map<string, string[]>();
    await transient("list its day index", async () => {
      for await (const item of this.client.listObjectsV2(this.bucket, `${DAY_ROOT}/`, true)) {
        const m = parseDayMarker((item as { name?: string }).name ?? "");
        if (m) days.set(m.object, [...(days.get(m.object) ?? []), m.day]);
      }
    });
    return days;
  }

  private async versions(): Promise<Map<string, ListedVersion[]>> {
    const byName = new Map<string, ListedVersion[]>();
    await transient("list its objects", async () => {
      for await (const item of this.client.listObjects(this.bucket, `${LOG_ROOT}/`, true, { IncludeVersion: true })) {
        // With IncludeVersion the items carry these fields, which minio's typings leave out.
        const o = item as { name?: string; versionId?: string; isDeleteMarker?: boolean };
        if (!o.name) continue;
        const list = byName.get(o.name) ?? [];
        list.push({ name: o.name, versionId: o.versionId && o.versionId !== "null" ? o.versionId : null, deleteMarker: Boolean(o.isDeleteMarker) });
        byName.set(o.name, list);
      }
    });
    return byName;
  }

  /**
   * Every entry, as first written: the first version of each object, whatever was put or
   * deleted over it since. With `since` (epoch ms), the objects the day index says hold only
   * entries of earlier days are not read (an object the index does not name is read all the
   * same); the entries of a day that is read are all returned, so filter them by time.
   */
  async read(options: { readonly since?: number } = {}): Promise<AuditRead> {
    const originals: ListedVersion[] = [];
    const altered: string[] = [];
    const fromDay = options.since === undefined ? null : utcDay(options.since);
    const days = fromDay === null ? null : await this.indexedDays();
    let skipped = 0;
    for (const [name, versions] of await this.versions()) {
      // A listing gives each name's versions newest first: the original is the last that is not a delete marker.
      const kept = versions.filter((v) => !v.deleteMarker);
      const original = kept[kept.length - 1];
      if (versions.length > 1) altered.push(name);
      if (!original || !parseObjectName(name)) continue;
      const indexed = days?.get(name);
      if (fromDay !== null && indexed && indexed.every((d) => d < fromDay)) {
        skipped++;
        continue;
      }
      originals.push(original);
    }
    const entries: AuditEvent[] = [];
    const unreadable: string[] = [];
    const queue = [...originals];
    const worker = async (): Promise<void> => {
      for (let v = queue.shift(); v; v = queue.shift()) {
        const { name, versionId } = v;
        const body = await transient(`read ${name}`, async () => text(await this.client.getObject(this.bucket, name, versionId ? { versionId } : {})));
        try {
          entries.push(...decodeLines(body, name));
        } catch (err) {
          unreadable.push((err as Error).message);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, queue.length) }, worker));
    return { entries, objects: originals.length, skipped, altered: altered.sort(), unreadable: unreadable.sort() };
  }
}
