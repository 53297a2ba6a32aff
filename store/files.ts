/**
 * Files between tools and offloaded results (OFF-2, OFF-8..OFF-10, FILE-2, FILE-6): bytes in
 * MinIO, content-addressed per tenant, sealed with the tenant's payload key, readable only by
 * a tree that stored them, kept 90 days after that tree last stored them, under legal holds.
 *
 * Object names, all under `files/<tenant>/` (docs/files.md):
 *
 * | object | what |
 * | --- | --- |
 * | `data/<hex>` | the sealed bytes; `<hex>` is the SHA-256 of the plaintext (the ref) |
 * | `grants/<hex>/tree/<tree>.json` | a grant: this tree may read it; `last_stored`, labels |
 * | `trees/<tree>/<hex>` | an empty marker, so a tree's files are found without a scan |
 *
 * `<tree>` is the tree ID in base64url, so any ID makes one safe name part. The bucket has
 * object locking, so it is versioned: every removal here removes each version by its ID (a
 * plain delete would only add a delete marker and keep the bytes).
 *
 * Order of writes, so that a crash leaves nothing unreachable by erasure or sweep: marker,
 * grant, then data; removal goes grant, marker, and data only once no grant is left.
 */
import type { Client } from "minio";
import { codeOf, minioFailure } from "./minio-errors.ts";
import { FileNotFound, FileTooLarge } from "./file-errors.ts";
import { MAX_FILE_BYTES, parseRef, readBytes, REF_PREFIX, refOf, tenantPath } from "./objects.ts";
import type { PayloadKeys } from "./payload-keys.ts";

/** Files are kept this long after a tree last stored them (FILE-6). */
export const RETENTION_MS = 90 * 24 * 60 * 60 * 1000;

/** Who stores a file: the tenant and the tree of the call binding, never what a caller claims. */
export interface FileOwner {
  readonly tenant: string;
  readonly tree: string;
}

/** Who reads a file. */
export interface FileReader extends FileOwner {
  /**
   * FILE-3: the trees of the earlier turns this turn may read (its conversation's turns up to
   * the fork point), from the conversation's record in Redis (`processors/files/redis-store.ts`,
   * `FilesStore.reader`), never from the caller. A grant to any of them lets this reader read.
   * Left out: the reader's own tree only.
   */
  readonly earlierTurns?: readonly string[];
}

/**
 * What a grant records. `scope` says who may read: a tree. Conversation turns (FILE-3) are
 * trees as well, so they need no other scope: a later turn reads through
 * `FileReader.earlierTurns`. A file handed to a person's job (FILE-4, `hand`) is a grant to
 * that job's tree like any other.
 */
export interface FileGrant {
  readonly v: 1;
  readonly ref: string;
  readonly scope: { readonly kind: "tree"; readonly tree: string };
  /** Milliseconds since the epoch. */
  readonly first_stored: number;
  /** Milliseconds since the epoch; the file is kept until RETENTION_MS after this. */
  readonly last_stored: number;
  /** The result's labels (OFF-9), sorted, each once. */
  readonly labels: readonly string[];
  /** Bytes of the plaintext. */
  readonly size: number;
}

export interface StoredFile {
  readonly ref: string;
  readonly size: number;
  readonly labels: readonly string[];
  readonly lastStored: number;
  /** When the sweep may remove this tree's grant, unless it stores the file again. */
  readonly expiresAt: number;
}

export interface ReadFile extends StoredFile {
  readonly bytes: Buffer;
}

/** What erasure did: refs whose grants (and bytes, when no other tree holds them) were removed, and refs kept under a legal hold. */
export interface ErasureReport {
  readonly erased: readonly string[];
  readonly held: readonly string[];
}

export interface SweepReport {
  /** Grants past retention that were removed (or, in a dry run, would be). */
  readonly expiredGrants: number;
  /** Files removed because no grant was left (or, in a dry run, that would be), as `<tenant>:<ref>`. */
  readonly deletedFiles: readonly string[];
  /**
   * Files kept although expired or without grants, as `<tenant>:<ref>`: under a legal hold
   * (the whole file), or a grant of a tree `SweepOptions.heldTree` says is held (that grant,
   * and the bytes while it stands).
   */
  readonly held: readonly string[];
  /** True when nothing was removed: the report says what a sweep would remove. */
  readonly dryRun: boolean;
}

export interface SweepOptions {
  /** Only this tenant's files (`files/<tenant>/`). @default every tenant's */
  readonly tenant?: string;
  /** Report what would be removed, removing nothing. @default false */
  readonly dryRun?: boolean;
  /** Whether a tenant's tree is under a hold kept outside MinIO: its grants are kept whatever their age. */
  readonly heldTree?: (tenant: string, tree: string) => boolean;
}

export interface FileStoreOptions {
  readonly client: Client;
  readonly bucket: string;
  readonly keys: PayloadKeys;
  /** The clock; tests move it. @default Date.now */
  readonly now?: () => number;
}

interface Version {
  readonly name: string;
  readonly versionId: string | null;
  readonly deleteMarker: boolean;
  readonly latest: boolean;
}

type Parsed =
  | { readonly kind: "data"; readonly tenant: string; readonly hex: string }
  | { readonly kind: "grant"; readonly tenant: string; readonly hex: string; readonly tree: string }
  | { readonly kind: "marker"; readonly tenant: string; readonly hex: string; readonly tree: string };

const ROOT = "files";
const HEX = /^[0-9a-f]{64}$/;

function treePart(tree: string): string {
  if (tree === "") throw new Error("a tree ID is empty: files are stored and read by the tree of the call binding");
  return Buffer.from(tree, "utf8").toString("base64url");
}

function treeOf(part: string): string {
  return Buffer.from(part, "base64url").toString("utf8");
}

/** Every object name of the file store is built and parsed here. */
export const fileNames = {
  tenant: (tenant: string): string => `${ROOT}/${tenantPath(tenant)}/`,
  data: (tenant: string, hex: string): string => `${ROOT}/${tenantPath(tenant)}/data/${hex}`,
  grants: (tenant: string, hex: string): string => `${ROOT}/${tenantPath(tenant)}/grants/${hex}/`,
  grant: (tenant: string, hex: string, tree: string): string => `${ROOT}/${tenantPath(tenant)}/grants/${hex}/tree/${treePart(tree)}.json`,
  tree: (tenant: string, tree: string): string => `${ROOT}/${tenantPath(tenant)}/trees/${treePart(tree)}/`,
  marker: (tenant: string, tree: string, hex: string): string => `${ROOT}/${tenantPath(tenant)}/trees/${treePart(tree)}/${hex}`,
  parse(name: string): Parsed | null {
    const p = name.split("/");
    if (p[0] !== ROOT || p[1] === undefined) return null;
    const tenant = p[1];
    if (p.length === 4 && p[2] === "data" && HEX.test(p[3] ?? "")) return { kind: "data", tenant, hex: p[3] ?? "" };
    if (p.length === 6 && p[2] === "grants" && HEX.test(p[3] ?? "") && p[4] === "tree" && p[5]?.endsWith(".json")) {
      return { kind: "grant", tenant, hex: p[3] ?? "", tree: treeOf(p[5].slice(0, -".json".length)) };
    }
    if (p.length === 5 && p[2] === "trees" && HEX.test(p[4] ?? "")) return { kind: "marker", tenant, hex: p[4] ?? "", tree: treeOf(p[3] ?? "") };
    return null;
  },
};

/** Bytes up to this size are sent to be stored only if absent; larger ones are sent only after a look finds them absent. */
const SENT_IF_ABSENT_BYTES = 1024 * 1024;

function isMissing(err: unknown): boolean {
  const code = codeOf(err);
  return code === "NoSuchKey" || code === "NotFound" || code === "NoSuchVersion";
}

function uniqueSorted(labels: readonly string[]): string[] {
  return [...new Set(labels)].sort();
}

function checkLabels(labels: readonly string[]): void {
  for (const label of labels) {
    if (typeof label !== "string" || label === "") throw new Error(`a label is a non-empty string; got ${JSON.stringify(label)}`);
  }
}

function parseGrant(text: string, name: string): FileGrant {
  const v = JSON.parse(text) as Partial<FileGrant> | null;
  if (!v || v.v !== 1 || typeof v.last_stored !== "number" || typeof v.ref !== "string" || !Array.isArray(v.labels)) {
    throw new Error(`grant ${name} is not a version 1 grant record; the file store cannot use it`);
  }
  return v as FileGrant;
}

/** What a grant says of its file. */
function storedOf(ref: string, grant: FileGrant): StoredFile {
  return { ref, size: grant.size, labels: grant.labels, lastStored: grant.last_stored, expiresAt: grant.last_stored + RETENTION_MS };
}

export class FileStore {
  readonly client: Client;
  readonly bucket: string;
  readonly #keys: PayloadKeys;
  readonly #now: () => number;

  constructor(options: FileStoreOptions) {
    this.client = options.client;
    this.bucket = options.bucket;
    this.#keys = options.keys;
    this.#now = options.now ?? Date.now;
  }

  /** Creates the bucket with object locking (legal holds need it) when it is missing. */
  async ensureBucket(): Promise<void> {
    if (await this.client.bucketExists(this.bucket)) return;
    try {
      await this.client.makeBucket(this.bucket, "", { ObjectLocking: true });
    } catch (err) {
      if (!(await this.client.bucketExists(this.bucket))) throw err;
    }
  }

  /**
   * Stores bytes as a file of the owner's tree and returns its ref (the SHA-256 of the
   * bytes). Storing the same bytes again writes no new data, renews the tree's retention and
   * adds any new labels to the grant's. Refuses more than 32 MiB before writing anything.
   */
  async store(owner: FileOwner, bytes: Buffer, options: { readonly labels?: readonly string[] } = {}): Promise<StoredFile> {
    if (bytes.length > MAX_FILE_BYTES) throw new FileTooLarge(bytes.length, MAX_FILE_BYTES);
    const labels = options.labels ?? [];
    checkLabels(labels);
    const ref = refOf(bytes);
    const hex = parseRef(ref);
    const now = this.#now();
    let grant: FileGrant;
    try {
      // Each object is put only where it is absent (If-None-Match), which says whether it was: a
      // first store is three requests, with no read before each write. The data goes after the
      // grant, so a grant whose data is not there yet reads as not found.
      grant = await this.writeGrant(owner.tenant, owner.tree, hex, { v: 1, ref, scope: { kind: "tree", tree: owner.tree }, first_stored: now, last_stored: now, labels: uniqueSorted(labels), size: bytes.length });
      const dataName = fileNames.data(owner.tenant, hex);
      // Large bytes are sent only when the data is absent; small ones are sent and refused when present.
      if (bytes.length <= SENT_IF_ABSENT_BYTES) await this.putIfAbsent(dataName, this.#keys.seal(owner.tenant, hex, bytes), "application/octet-stream");
      else if (!(await this.exists(dataName))) {
        const sealed = this.#keys.seal(owner.tenant, hex, bytes);
        await this.client.putObject(this.bucket, dataName, sealed, sealed.length, { "Content-Type": "application/octet-stream" });
      }
    } catch (err) {
      throw minioFailure(err, `store a file of tenant ${owner.tenant}`, `bucket ${this.bucket}`);
    }
    return { ...storedOf(ref, grant), size: bytes.length };
  }

  /**
   * The file's bytes and labels, when a grant lets the reader read it; else FileNotFound,
   * the same for a ref never stored, one of another tree and one of another tenant: each
   * takes the same one request per tree asked about before it fails.
   */
  async read(reader: FileReader, ref: string): Promise<ReadFile> {
    const hex = parseRef(ref);
    // The sealed bytes are asked for beside the grant (one round trip, not two); they are opened only for a reader the grant lets read them.
    const data = this.client.getObject(this.bucket, fileNames.data(reader.tenant, hex)).then(readBytes).then(
      (sealed) => ({ sealed }),
      (err: unknown) => ({ err }),
    );
    const [grant, got] = await Promise.all([this.readerGrant(reader, hex), data]);
    if (grant === null) throw new FileNotFound(ref);
    if ("err" in got) {
      // A grant whose data is not there yet (a store in progress) or no more: not a file to read.
      if (isMissing(got.err)) throw new FileNotFound(ref);
      throw minioFailure(got.err, `read a file of tenant ${reader.tenant}`, `bucket ${this.bucket}`);
    }
    const bytes = this.#keys.open(reader.tenant, hex, got.sealed);
    return { ...storedOf(ref, grant), bytes, size: bytes.length };
  }

  /**
   * What `read` would return but the bytes, from the reader's grant alone: for a reader that
   * holds the bytes of this ref already (read before, and the same ref is the same bytes).
   * FileNotFound where the reader has no grant (never stored, another tree's or another
   * tenant's, erased, or past retention); one request per tree asked about.
   */
  async granted(reader: FileReader, ref: string): Promise<StoredFile> {
    const grant = await this.readerGrant(reader, parseRef(ref));
    if (grant === null) throw new FileNotFound(ref);
    return storedOf(ref, grant);
  }

  /**
   * What `read` would return but the bytes: whether the reader may read the file (FILE-1: a
   * call's file argument is resolved only then). FileNotFound on the same terms as `read`,
   * with the same requests for every case, so the answer tells nothing more than `read` would.
   */
  async readable(reader: FileReader, ref: string): Promise<StoredFile> {
    const hex = parseRef(ref);
    // Asked together, as `read` asks for the grant and the bytes.
    const [grant, there] = await Promise.all([this.readerGrant(reader, hex), this.dataExists(reader.tenant, hex)]);
    if (grant === null || !there) throw new FileNotFound(ref);
    return storedOf(ref, grant);
  }

  /**
   * FILE-4: grants a file some tree of the tenant holds to another tree of the same tenant,
   * without its bytes passing anywhere: a person or app with the content permission handed it
   * to a job. The new grant carries the labels of the live grants and is kept for 90 days from
   * now, as a store would be. FileNotFound when no tree of the tenant holds it (never stored,
   * another tenant's, erased, or past retention). Handing again renews it, as storing does.
   */
  async hand(tenant: string, ref: string, toTree: string): Promise<StoredFile> {
    const hex = parseRef(ref);
    const now = this.#now();
    let live: FileGrant[];
    try {
      live = [];
      for (const name of await this.names(fileNames.grants(tenant, hex))) {
        const g = await this.grantAt(name);
        if (g !== null && g.last_stored + RETENTION_MS > now) live.push(g);
      }
    } catch (err) {
      throw minioFailure(err, `list the grants of a file of tenant ${tenant}`, `bucket ${this.bucket}`);
    }
    const source = live[0];
    if (source === undefined || !(await this.dataExists(tenant, hex))) throw new FileNotFound(ref);
    let grant: FileGrant;
    try {
      grant = await this.writeGrant(tenant, toTree, hex, { v: 1, ref, scope: { kind: "tree", tree: toTree }, first_stored: now, last_stored: now, labels: uniqueSorted(live.flatMap((g) => g.labels)), size: source.size });
    } catch (err) {
      throw minioFailure(err, `hand a file of tenant ${tenant} to a tree`, `bucket ${this.bucket}`);
    }
    return storedOf(ref, grant);
  }

  /**
   * FILE-5: whether a tree still holds a file (a grant not past retention), so that a start
   * under that tree's ID would inherit it.
   */
  async holdsFiles(tenant: string, tree: string): Promise<boolean> {
    let markers: string[];
    try {
      markers = await this.names(fileNames.tree(tenant, tree));
    } catch (err) {
      throw minioFailure(err, `list the files of a tree of tenant ${tenant}`, `bucket ${this.bucket}`);
    }
    for (const name of markers) {
      const p = fileNames.parse(name);
      if (p?.kind !== "marker") continue;
      const g = await this.grantAt(fileNames.grant(tenant, p.hex, tree));
      if (g !== null && g.last_stored + RETENTION_MS > this.#now()) return true;
    }
    return false;
  }

  /** Puts a legal hold on a tenant's file (every version of its data), or lifts it. */
  async setLegalHold(tenant: string, ref: string, on: boolean): Promise<void> {
    const name = fileNames.data(tenant, parseRef(ref));
    const versions = (await this.versions(name)).filter((v) => !v.deleteMarker);
    if (versions.length === 0) throw new FileNotFound(ref);
    for (const v of versions) {
      const opts = { status: on ? ("ON" as const) : ("OFF" as const), ...(v.versionId ? { versionId: v.versionId } : {}) };
      // minio's typings declare this void; it returns a promise.
      await (this.client.setObjectLegalHold(this.bucket, name, opts) as unknown as Promise<void>);
    }
  }

  /** True when some version of the tenant's file is under a legal hold. */
  async isHeld(tenant: string, ref: string): Promise<boolean> {
    return this.heldData(fileNames.data(tenant, parseRef(ref)));
  }

  /** The grant of one tree, or null: for retention checks and tests. */
  async grantOf(owner: FileOwner, ref: string): Promise<FileGrant | null> {
    return this.grantAt(fileNames.grant(owner.tenant, parseRef(ref), owner.tree));
  }

  /**
   * Erases a tree's files: its grants, and the bytes of each file no other tree holds. A
   * file under a legal hold is left exactly as it is, grant included, and reported.
   */
  async eraseTree(tenant: string, tree: string): Promise<ErasureReport> {
    const erased: string[] = [];
    const held: string[] = [];
    const hexes = new Set<string>();
    for (const v of await this.versions(fileNames.tree(tenant, tree), true)) {
      const p = fileNames.parse(v.name);
      if (p?.kind === "marker" && !v.deleteMarker) hexes.add(p.hex);
    }
    for (const hex of [...hexes].sort()) {
      const ref = `${REF_PREFIX}${hex}`;
      if (await this.heldData(fileNames.data(tenant, hex))) {
        held.push(ref);
        continue;
      }
      await this.removeAllVersions(fileNames.grant(tenant, hex, tree));
      await this.removeAllVersions(fileNames.marker(tenant, tree, hex));
      await this.removeDataIfUnclaimed(tenant, hex);
      erased.push(ref);
    }
    return { erased, held };
  }

  /** Erases every file of a tenant, grants and bytes, except files under a legal hold (kept and reported). */
  async eraseTenant(tenant: string): Promise<ErasureReport> {
    const byHex = new Map<string, Version[]>();
    for (const v of await this.versions(fileNames.tenant(tenant), true)) {
      const p = fileNames.parse(v.name);
      if (p === null) continue;
      const list = byHex.get(p.hex) ?? [];
      list.push(v);
      byHex.set(p.hex, list);
    }
    const erased: string[] = [];
    const held: string[] = [];
    for (const [hex, versions] of [...byHex].sort(([a], [b]) => a.localeCompare(b))) {
      const ref = `${REF_PREFIX}${hex}`;
      if (await this.heldData(fileNames.data(tenant, hex))) {
        held.push(ref);
        continue;
      }
      // Grants and markers first, the data last, as everywhere else.
      const dataLast = [...versions].sort((a, b) => Number(fileNames.parse(a.name)?.kind === "data") - Number(fileNames.parse(b.name)?.kind === "data"));
      for (const v of dataLast) await this.removeVersion(v);
      erased.push(ref);
    }
    return { erased, held };
  }

  /**
   * Retention (FILE-6): removes every grant whose tree last stored its file more than 90 days
   * before `now`, then the bytes of every file with no grant left. A file under a legal hold
   * is skipped whole, its grants included, and reported; so is an expired grant of a tree
   * `heldTree` names (with the bytes it still claims). Nothing else lengthens a grant: only
   * `last_stored` counts, whatever else a grant or an agent says (an agent's keep-for period
   * does not lengthen a file's retention). With `dryRun` nothing is removed and the report says
   * what would be. Removing nothing more when run again: a second sweep at the same `now`
   * finds nothing expired.
   */
  async sweep(now: number = this.#now(), options: SweepOptions = {}): Promise<SweepReport> {
    const dryRun = options.dryRun ?? false;
    const heldTree = options.heldTree ?? (() => false);
    type Entry = { tenant: string; hex: string; data: boolean; grants: { name: string; tree: string }[]; markers: { name: string; tree: string }[] };
    const files = new Map<string, Entry>();
    const entry = (tenant: string, hex: string): Entry => {
      const key = `${tenant}:${hex}`;
      let e = files.get(key);
      if (!e) files.set(key, (e = { tenant, hex, data: false, grants: [], markers: [] }));
      return e;
    };
    for (const name of await this.names(options.tenant === undefined ? `${ROOT}/` : fileNames.tenant(options.tenant))) {
      const p = fileNames.parse(name);
      if (p === null) continue;
      const e = entry(p.tenant, p.hex);
      if (p.kind === "data") e.data = true;
      else if (p.kind === "grant") e.grants.push({ name, tree: p.tree });
      else e.markers.push({ name, tree: p.tree });
    }
    let expiredGrants = 0;
    const deletedFiles: string[] = [];
    const held: string[] = [];
    for (const e of files.values()) {
      const expired: { name: string; tree: string }[] = [];
      let heldGrants = 0;
      for (const g of e.grants) {
        const grant = await this.grantAt(g.name);
        if (grant === null || grant.last_stored + RETENTION_MS > now) continue;
        // An expired grant of a held tree stays, and keeps its file's bytes with it.
        if (heldTree(e.tenant, g.tree)) heldGrants++;
        else expired.push(g);
      }
      const live = new Set(e.grants.filter((g) => !expired.includes(g)).map((g) => g.tree));
      const orphanMarkers = e.markers.filter((m) => !e.grants.some((g) => g.tree === m.tree));
      const dataUnclaimed = e.data && live.size === 0;
      const label = `${e.tenant}:${REF_PREFIX}${e.hex}`;
      if (heldGrants > 0) held.push(label);
      if (expired.length === 0 && !dataUnclaimed && orphanMarkers.length === 0) continue;
      if (e.data && (await this.heldData(fileNames.data(e.tenant, e.hex)))) {
        if (heldGrants === 0) held.push(label);
        continue;
      }
      if (dryRun) {
        expiredGrants += expired.length;
        if (dataUnclaimed) deletedFiles.push(label);
        continue;
      }
      for (const g of expired) {
        await this.removeAllVersions(g.name);
        await this.removeAllVersions(fileNames.marker(e.tenant, g.tree, e.hex));
        expiredGrants++;
      }
      for (const m of orphanMarkers) await this.removeAllVersions(m.name);
      if (e.data && live.size === 0 && (await this.removeDataIfUnclaimed(e.tenant, e.hex))) deletedFiles.push(label);
    }
    return { expiredGrants, deletedFiles: deletedFiles.sort(), held: held.sort(), dryRun };
  }

  /** The first grant not past retention among the reader's tree and its earlier turns (FILE-2, FILE-3). */
  private async readerGrant(reader: FileReader, hex: string): Promise<FileGrant | null> {
    for (const tree of [reader.tree, ...(reader.earlierTurns ?? [])]) {
      const found = await this.grantAt(fileNames.grant(reader.tenant, hex, tree));
      // Past retention a grant reads as no grant, whether or not the sweep has removed it yet.
      if (found !== null && found.last_stored + RETENTION_MS > this.#now()) return found;
    }
    return null;
  }

  private async dataExists(tenant: string, hex: string): Promise<boolean> {
    try {
      return await this.exists(fileNames.data(tenant, hex));
    } catch (err) {
      throw minioFailure(err, `find a file of tenant ${tenant}`, `bucket ${this.bucket}`);
    }
  }

  private async grantAt(name: string): Promise<FileGrant | null> {
    try {
      return parseGrant((await readBytes(await this.client.getObject(this.bucket, name))).toString("utf8"), name);
    } catch (err) {
      if (isMissing(err)) return null;
      throw minioFailure(err, "read a file grant", `bucket ${this.bucket}`);
    }
  }

  /**
   * A tree's grant of a file: its marker first (so erasing the tree finds the grant written after
   * it), then the grant, each put only where absent. A grant the tree held already is renewed:
   * its first store kept, its last the later of the two, the labels joined. The grant as written.
   */
  private async writeGrant(tenant: string, tree: string, hex: string, fresh: FileGrant): Promise<FileGrant> {
    const name = fileNames.grant(tenant, hex, tree);
    await this.putIfAbsent(fileNames.marker(tenant, tree, hex), Buffer.alloc(0), "application/octet-stream");
    if (await this.putIfAbsent(name, Buffer.from(JSON.stringify(fresh), "utf8"), "application/json")) return fresh;
    const previous = await this.grantAt(name);
    const grant: FileGrant = previous === null ? fresh : { ...fresh, first_stored: previous.first_stored, last_stored: Math.max(fresh.last_stored, previous.last_stored), labels: uniqueSorted([...previous.labels, ...fresh.labels]) };
    const body = Buffer.from(JSON.stringify(grant), "utf8");
    await this.client.putObject(this.bucket, name, body, body.length, { "Content-Type": "application/json" });
    if (previous !== null) await this.removeOlderVersions(name);
    return grant;
  }

  /** Puts the object only when it is absent (or its latest version is a delete marker): false when it was there. */
  private async putIfAbsent(name: string, body: Buffer, contentType: string): Promise<boolean> {
    try {
      await this.client.putObject(this.bucket, name, body, body.length, { "Content-Type": contentType, "If-None-Match": "*" });
      return true;
    } catch (err) {
      if (codeOf(err) === "PreconditionFailed") return false;
      throw err;
    }
  }

  private async exists(name: string): Promise<boolean> {
    try {
      await this.client.statObject(this.bucket, name);
      return true;
    } catch (err) {
      if (isMissing(err)) return false;
      throw err;
    }
  }

  private async heldData(name: string): Promise<boolean> {
    for (const v of await this.versions(name)) {
      if (v.deleteMarker) continue;
      // minio's typings say a status string; it answers the parsed `<LegalHold><Status>`.
      const answer: unknown = await this.client.getObjectLegalHold(this.bucket, name, v.versionId ? { versionId: v.versionId } : undefined).catch((err: unknown) => {
        // A version that never had a hold may be answered with this code.
        if (codeOf(err) === "NoSuchObjectLockConfiguration") return "OFF";
        throw minioFailure(err, "read a legal hold", `bucket ${this.bucket}`);
      });
      const status = answer !== null && typeof answer === "object" && "Status" in answer ? answer.Status : answer;
      if (status === "ON") return true;
    }
    return false;
  }

  /**
   * Removes a file's data once no grant is left. The versions are listed before the grants
   * are checked, so a version a concurrent store writes after the check is not among those
   * removed. Returns whether anything was removed.
   */
  private async removeDataIfUnclaimed(tenant: string, hex: string): Promise<boolean> {
    const versions = await this.versions(fileNames.data(tenant, hex));
    if (versions.length === 0) return false;
    if ((await this.names(fileNames.grants(tenant, hex))).length > 0) return false;
    for (const v of versions) await this.removeVersion(v);
    return true;
  }

  private async removeOlderVersions(name: string): Promise<void> {
    for (const v of await this.versions(name)) if (!v.latest) await this.removeVersion(v);
  }

  private async removeAllVersions(name: string): Promise<void> {
    for (const v of await this.versions(name)) await this.removeVersion(v);
  }

  private async removeVersion(v: Version): Promise<void> {
    try {
      await this.client.removeObject(this.bucket, v.name, v.versionId ? { versionId: v.versionId } : {});
    } catch (err) {
      if (isMissing(err)) return;
      throw minioFailure(err, "remove a stored file", `bucket ${this.bucket}`);
    }
  }

  /** Current object names under a prefix. */
  private async names(prefix: string): Promise<string[]> {
    const out: string[] = [];
    try {
      for await (const item of this.client.listObjects(this.bucket, prefix, true)) {
        const o = item as { name?: string };
        if (o.name) out.push(o.name);
      }
    } catch (err) {
      throw minioFailure(err, "list stored files", `bucket ${this.bucket}`);
    }
    return out;
  }

  /** Every version (delete markers included) of one name, or of all names under a prefix when `under`. */
  private async versions(nameOrPrefix: string, under = false): Promise<Version[]> {
    const out: Version[] = [];
    if (under) {
      // minio's versioned listing signs its second page wrongly (SignatureDoesNotMatch past
      // 1,000 versions), so a prefix is listed by name, which pages right, then each name's
      // versions. The store removes versions by ID and never leaves a name behind a delete
      // marker, so listing by name finds every name it wrote.
      for (const name of await this.names(nameOrPrefix)) out.push(...(await this.versions(name)));
      return out;
    }
    try {
      for await (const item of this.client.listObjects(this.bucket, nameOrPrefix, true, { IncludeVersion: true })) {
        // With IncludeVersion the items carry these fields, which minio's typings leave out.
        const o = item as { name?: string; versionId?: string; isDeleteMarker?: boolean; isLatest?: string | boolean };
        if (!o.name || (!under && o.name !== nameOrPrefix)) continue;
        out.push({ name: o.name, versionId: o.versionId && o.versionId !== "null" ? o.versionId : null, deleteMarker: o.isDeleteMarker === true, latest: o.isLatest === true || o.isLatest === "true" });
      }
    } catch (err) {
      throw minioFailure(err, "list stored files", `bucket ${this.bucket}`);
    }
    return out;
  }
}
