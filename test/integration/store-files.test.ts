import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileNotFound, FileTooLarge } from "../../store/file-errors.ts";
import { fileNames, FileStore, RETENTION_MS } from "../../store/files.ts";
import { MAX_FILE_BYTES, minioClient, parseRef, refOf } from "../../store/objects.ts";
import { PayloadKeys } from "../../store/payload-keys.ts";
import { inspect } from "node:util";
import { endpoints } from "../support/kafka.ts";
import { uid } from "../support/events.ts";
import { rejectionOf } from "../support/promises.ts";

const DAY = 24 * 60 * 60 * 1000;


type ClientMethod = (...args: unknown[]) => Promise<unknown>;

/** Runs `body` with the client's `methods` wrapped by `wrap` (given each one's name and original), then puts them back. */
async function around<T>(client: object, methods: readonly string[], wrap: (method: string, original: ClientMethod) => ClientMethod, body: () => Promise<T>): Promise<T> {
  const methodsOf = client as Record<string, ClientMethod>;
  const originals = methods.map((m) => [m, methodsOf[m] as ClientMethod] as const);
  for (const [m, original] of originals) methodsOf[m] = wrap(m, (...args) => original.apply(client, args));
  try {
    return await body();
  } finally {
    for (const [m, original] of originals) methodsOf[m] = original;
  }
}

/** Wraps so that `most` reports the most calls in flight at once. */
function inFlight(): { readonly wrap: (method: string, original: ClientMethod) => ClientMethod; readonly most: () => number } {
  let now = 0;
  let most = 0;
  return {
    wrap: (_method, original) => async (...args) => {
      most = Math.max(most, ++now);
      try {
        return await original(...args);
      } finally {
        now--;
      }
    },
    most: () => most,
  };
}

describe("the file store in real MinIO", () => {
  let clock = Date.UTC(2026, 0, 1);
  let files: FileStore;
  const bucket = uid("oz0-test").toLowerCase();
  const tenant = uid("acme");
  const other = uid("globex");

  beforeAll(async () => {
    files = new FileStore({ client: minioClient(endpoints()), bucket, keys: PayloadKeys.fromMaster(Buffer.alloc(32, 7)), now: () => clock });
    await files.ensureBucket();
  });

  afterAll(async () => {
    // Lift holds and erase what is left, so the bucket can be removed.
    const client = files.client;
    for await (const item of client.listObjects(bucket, "", true, { IncludeVersion: true })) {
      const o = item as { name?: string; versionId?: string };
      if (!o.name) continue;
      const opts = o.versionId ? { versionId: o.versionId } : {};
      await (client.setObjectLegalHold(bucket, o.name, { status: "OFF", ...opts }) as unknown as Promise<void>).catch(() => undefined);
      await client.removeObject(bucket, o.name, opts).catch(() => undefined);
    }
    await client.removeBucket(bucket).catch(() => undefined);
  });

  it("FILE-2 a tree reads back what it stored, with its labels (OFF-9)", async () => {
    const tree = uid("tree");
    const bytes = Buffer.from(`report ${uid("x")}`);
    const stored = await files.store({ tenant, tree }, bytes, { labels: ["pii", "finance", "pii"] });
    expect(stored.ref).toBe(refOf(bytes));
    expect(stored.labels).toEqual(["finance", "pii"]);
    const read = await files.read({ tenant, tree }, stored.ref);
    expect(read.bytes.equals(bytes)).toBe(true);
    expect(read.labels).toEqual(["finance", "pii"]);
  });

  it("FILE-2 OFF-8 another tree and another tenant get 'not found' exactly as for a ref never stored", async () => {
    const tree = uid("tree");
    const stored = await files.store({ tenant, tree }, Buffer.from(`secret ${uid("x")}`));
    const never = refOf(Buffer.from(`never stored ${uid("x")}`));
    const otherTree = await rejectionOf(files.read({ tenant, tree: uid("tree") }, stored.ref));
    const otherTenant = await rejectionOf(files.read({ tenant: other, tree }, stored.ref));
    const neverStored = await rejectionOf(files.read({ tenant, tree }, never));
    for (const err of [otherTree, otherTenant, neverStored]) expect(err).toBeInstanceOf(FileNotFound);
    const shape = (err: unknown, ref: string) => ({ ...(err as object), message: (err as Error).message.replace(ref, "<ref>"), name: (err as Error).name, ref: "<ref>" });
    expect(shape(otherTree, stored.ref)).toEqual(shape(neverStored, never));
    expect(shape(otherTenant, stored.ref)).toEqual(shape(neverStored, never));
    expect((otherTree as Error).message).not.toContain(tenant);
    expect((otherTree as Error).message).not.toContain(tree);
  });

  it("FILE-2 a read asks for its grant and its bytes at once, not one after the other", async () => {
    const tree = uid("tree");
    const bytes = Buffer.from(`both at once ${uid("x")}`);
    const stored = await files.store({ tenant, tree }, bytes);
    const flight = inFlight();
    await around(files.client, ["getObject"], flight.wrap, async () => {
      expect((await files.read({ tenant, tree }, stored.ref)).bytes.equals(bytes)).toBe(true);
      await expect(files.read({ tenant, tree: uid("tree") }, stored.ref)).rejects.toBeInstanceOf(FileNotFound);
    });
    expect(flight.most()).toBe(2);
  });

  it("FILE-1 readable asks for its grant and whether the bytes are there at once, for a reader it lets read and one it does not", async () => {
    const tree = uid("tree");
    const stored = await files.store({ tenant, tree }, Buffer.from(`readable ${uid("x")}`), { labels: ["pii"] });
    const flight = inFlight();
    await around(files.client, ["getObject", "statObject"], flight.wrap, async () => {
      expect(await files.readable({ tenant, tree }, stored.ref)).toMatchObject({ ref: stored.ref, labels: ["pii"] });
      await expect(files.readable({ tenant, tree: uid("tree") }, stored.ref)).rejects.toBeInstanceOf(FileNotFound);
    });
    expect(flight.most()).toBe(2);
  });

  it("FILE-6 a first store puts the marker, the grant and the data, each only where absent, and reads nothing first; another tree's store of the same bytes keeps the data as it was", async () => {
    const client = files.client;
    const calls: string[] = [];
    const bytes = Buffer.from(`first store ${uid("x")}`);
    const big = Buffer.alloc(1024 * 1024 + 1, 3);
    big.write(uid("big"));
    const [tree, another] = [uid("tree"), uid("tree")];
    const counts: string[][] = [];
    const recorded = (method: string, original: ClientMethod): ClientMethod => (...args) => {
      calls.push(`${method} ${String(args[1]).split("/").slice(2, 3).join("")}`);
      return original(...args);
    };
    const { stored, again, large } = await around(client, ["putObject", "getObject", "statObject"], recorded, async () => {
      const stored = await files.store({ tenant, tree }, bytes);
      counts.push(calls.splice(0));
      const before = await client.statObject(bucket, fileNames.data(tenant, parseRef(stored.ref)));
      calls.splice(0);
      const again = await files.store({ tenant, tree: another }, bytes, { labels: ["b"] });
      counts.push(calls.splice(0));
      const after = await client.statObject(bucket, fileNames.data(tenant, parseRef(stored.ref)));
      expect(after.versionId).toBe(before.versionId);
      calls.splice(0);
      const large = await files.store({ tenant, tree }, big);
      counts.push(calls.splice(0));
      return { stored, again, large };
    });
    expect(counts[0]).toEqual(["putObject trees", "putObject grants", "putObject data"]);
    expect(counts[1]).toEqual(["putObject trees", "putObject grants", "putObject data"]);
    // Bytes above a MiB are looked for first, not sent to be refused.
    expect(counts[2]).toEqual(["putObject trees", "putObject grants", "statObject data", "putObject data"]);
    expect(again.labels).toEqual(["b"]);
    expect((await files.read({ tenant, tree: another }, again.ref)).bytes.equals(bytes)).toBe(true);
    expect((await files.read({ tenant, tree }, stored.ref)).bytes.equals(bytes)).toBe(true);
    expect((await files.read({ tenant, tree }, large.ref)).bytes.equals(big)).toBe(true);
    // The tree's marker, written once: a store again writes no new version of it.
    await files.store({ tenant, tree }, bytes);
    const markers = [];
    for await (const o of client.listObjects(bucket, fileNames.marker(tenant, tree, parseRef(stored.ref)), true, { IncludeVersion: true })) markers.push(o);
    expect(markers).toHaveLength(1);
  });

  it("FILE-4 handing a file to a tree that holds it already renews that tree's grant, joins the labels and keeps one version of it", async () => {
    const [owner, holder] = [uid("tree"), uid("tree")];
    const bytes = Buffer.from(`handed ${uid("x")}`);
    const stored = await files.store({ tenant, tree: owner }, bytes, { labels: ["pii"] });
    const held = await files.store({ tenant, tree: holder }, bytes, { labels: ["ops"] });
    clock += 3 * DAY;
    const handed = await files.hand(tenant, stored.ref, holder);
    expect(handed.labels).toEqual(["ops", "pii"]);
    expect(handed.lastStored).toBe(held.lastStored + 3 * DAY);
    const grant = await files.grantOf({ tenant, tree: holder }, stored.ref);
    expect(grant?.first_stored).toBe(held.lastStored);
    expect(grant?.last_stored).toBe(handed.lastStored);
    const versions = [];
    for await (const o of files.client.listObjects(bucket, fileNames.grant(tenant, parseRef(stored.ref), holder), true, { IncludeVersion: true })) versions.push(o);
    expect(versions).toHaveLength(1);
  });

  it("FILE-6 storing the same bytes twice is idempotent and renews retention", async () => {
    const tree = uid("tree");
    const bytes = Buffer.from(`twice ${uid("x")}`);
    const first = await files.store({ tenant, tree }, bytes, { labels: ["a"] });
    const dataName = fileNames.data(tenant, parseRef(first.ref));
    const before = await files.client.statObject(bucket, dataName);
    clock += 10 * DAY;
    const second = await files.store({ tenant, tree }, bytes, { labels: ["b"] });
    expect(second.ref).toBe(first.ref);
    expect(second.lastStored).toBe(first.lastStored + 10 * DAY);
    expect(second.expiresAt).toBe(second.lastStored + RETENTION_MS);
    expect(second.labels).toEqual(["a", "b"]);
    const after = await files.client.statObject(bucket, dataName);
    expect(after.versionId).toBe(before.versionId);
    expect(after.etag).toBe(before.etag);
    expect((await files.grantOf({ tenant, tree }, first.ref))?.last_stored).toBe(second.lastStored);
    expect((await files.read({ tenant, tree }, first.ref)).bytes.equals(bytes)).toBe(true);
  });

  it("OFF-2 FILE-6 a file of 32 MiB + 1 byte is refused with a clear error, and 32 MiB is kept", async () => {
    const tree = uid("tree");
    const big = Buffer.alloc(MAX_FILE_BYTES + 1, 0x61);
    const err = await rejectionOf(files.store({ tenant, tree }, big));
    expect(err).toBeInstanceOf(FileTooLarge);
    expect((err as Error).message).toMatch(/at most 33554432 bytes \(32 MiB\); this one has 33554433 bytes/);
    const stored = await files.store({ tenant, tree }, big.subarray(0, MAX_FILE_BYTES));
    expect((await files.read({ tenant, tree }, stored.ref)).size).toBe(MAX_FILE_BYTES);
  });

  it("OFF-10 FILE-6 the object's bytes in MinIO are sealed, not the plaintext", async () => {
    const tree = uid("tree");
    const text = `plain words that must not be stored as they are ${uid("x")}`;
    const stored = await files.store({ tenant, tree }, Buffer.from(text));
    const raw: Buffer[] = [];
    for await (const chunk of await files.client.getObject(bucket, fileNames.data(tenant, parseRef(stored.ref)))) raw.push(chunk as Buffer);
    const body = Buffer.concat(raw);
    expect(body.includes(Buffer.from(text))).toBe(false);
    expect(body.includes(Buffer.from("plain words"))).toBe(false);
    expect(body.length).toBeGreaterThan(text.length);
    // Another master key does not open it, and says nothing of either key.
    const stranger = new FileStore({ client: files.client, bucket, keys: PayloadKeys.fromMaster(Buffer.alloc(32, 9)), now: () => clock });
    const err = await rejectionOf(stranger.read({ tenant, tree }, stored.ref));
    expect((err as Error).message).toMatch(/another master payload key/);
  });

  it("OFF-10 the payload key never shows: not in an inspected value, JSON, or the error for a malformed OZ0_PAYLOAD_KEY", () => {
    const secret = Buffer.alloc(32, 5).toString("base64");
    const keys = PayloadKeys.fromEnv({ OZ0_PAYLOAD_KEY: secret });
    expect(keys.development).toBe(false);
    expect(inspect(keys)).not.toContain(secret);
    expect(JSON.stringify({ keys })).not.toContain(secret);
    expect(PayloadKeys.fromEnv({}).development).toBe(true);
    const bad = `${secret.slice(0, 20)}`;
    expect(() => PayloadKeys.fromEnv({ OZ0_PAYLOAD_KEY: bad })).toThrow(/must be base64 of 32 random bytes/);
    try {
      PayloadKeys.fromEnv({ OZ0_PAYLOAD_KEY: bad });
    } catch (err) {
      expect((err as Error).message).not.toContain(bad);
    }
  });

  it("FILE-6 a legal hold stops erasure of a tree and of a tenant; the held file is kept and reported", async () => {
    const t = uid("held");
    const tree = uid("tree");
    const kept = await files.store({ tenant: t, tree }, Buffer.from(`evidence ${uid("x")}`));
    const gone = await files.store({ tenant: t, tree }, Buffer.from(`ordinary ${uid("x")}`));
    await files.setLegalHold(t, kept.ref, true);
    expect(await files.isHeld(t, kept.ref)).toBe(true);
    const report = await files.eraseTree(t, tree);
    expect(report.held).toEqual([kept.ref]);
    expect(report.erased).toEqual([gone.ref]);
    expect((await files.read({ tenant: t, tree }, kept.ref)).ref).toBe(kept.ref);
    await expect(files.read({ tenant: t, tree }, gone.ref)).rejects.toBeInstanceOf(FileNotFound);
    expect(await files.client.listObjects(bucket, fileNames.data(t, parseRef(gone.ref)), false, { IncludeVersion: true }).toArray()).toEqual([]);

    const tenantReport = await files.eraseTenant(t);
    expect(tenantReport).toEqual({ erased: [], held: [kept.ref] });
    await files.setLegalHold(t, kept.ref, false);
    expect(await files.eraseTenant(t)).toEqual({ erased: [kept.ref], held: [] });
    expect(await files.client.listObjects(bucket, fileNames.tenant(t), true, { IncludeVersion: true }).toArray()).toEqual([]);
  });

  it("FILE-6 erasure reaches every file of a tenant with more than 1,000 objects stored (past one listing page)", async () => {
    const big = uid("bigco");
    const tree = uid("tree");
    const refs: string[] = [];
    // Each file is three objects (marker, grant, data): 360 files make 1,080.
    for (let i = 0; i < 360; i += 40) {
      const batch = await Promise.all(Array.from({ length: 40 }, (_, j) => files.store({ tenant: big, tree }, Buffer.from(`page ${i + j} ${big}`))));
      refs.push(...batch.map((f) => f.ref));
    }
    const report = await files.eraseTenant(big);
    expect(report.held).toEqual([]);
    expect(report.erased.length).toBe(360);
    for (const ref of refs.slice(0, 5)) await expect(files.read({ tenant: big, tree }, ref)).rejects.toBeInstanceOf(FileNotFound);
    let left = 0;
    for await (const _ of files.client.listObjects(bucket, fileNames.tenant(big), true)) left++;
    expect(left).toBe(0);
  }, 300_000);

  it("FILE-6 erasing a tree keeps a file another tree also stored", async () => {
    const t = uid("shared");
    const [a, b] = [uid("tree"), uid("tree")];
    const bytes = Buffer.from(`shared ${uid("x")}`);
    const stored = await files.store({ tenant: t, tree: a }, bytes);
    await files.store({ tenant: t, tree: b }, bytes);
    expect(await files.eraseTree(t, a)).toEqual({ erased: [stored.ref], held: [] });
    await expect(files.read({ tenant: t, tree: a }, stored.ref)).rejects.toBeInstanceOf(FileNotFound);
    expect((await files.read({ tenant: t, tree: b }, stored.ref)).bytes.equals(bytes)).toBe(true);
  });

  it("FILE-6 sweep removes grants 90 days after the last store and files with no grant left, skipping held files", async () => {
    const t = uid("sweep");
    const [old, fresh] = [uid("tree"), uid("tree")];
    const start = clock;
    const expired = await files.store({ tenant: t, tree: old }, Buffer.from(`expires ${uid("x")}`));
    const held = await files.store({ tenant: t, tree: old }, Buffer.from(`held ${uid("x")}`));
    await files.setLegalHold(t, held.ref, true);
    const shared = Buffer.from(`shared ${uid("x")}`);
    const sharedRef = (await files.store({ tenant: t, tree: old }, shared)).ref;
    clock = start + 60 * DAY;
    await files.store({ tenant: t, tree: fresh }, shared);

    const justBefore = await files.sweep(start + RETENTION_MS - 1);
    expect(justBefore.deletedFiles.filter((f) => f.startsWith(`${t}:`))).toEqual([]);
    expect((await files.read({ tenant: t, tree: old }, expired.ref)).ref).toBe(expired.ref);

    clock = start + RETENTION_MS;
    await expect(files.read({ tenant: t, tree: old }, expired.ref)).rejects.toBeInstanceOf(FileNotFound);
    const report = await files.sweep(clock);
    expect(report.deletedFiles.filter((f) => f.startsWith(`${t}:`))).toEqual([`${t}:${expired.ref}`]);
    expect(report.held.filter((f) => f.startsWith(`${t}:`))).toEqual([`${t}:${held.ref}`]);
    expect(await files.grantOf({ tenant: t, tree: old }, expired.ref)).toBeNull();
    expect(await files.grantOf({ tenant: t, tree: old }, sharedRef)).toBeNull();
    expect((await files.read({ tenant: t, tree: fresh }, sharedRef)).bytes.equals(shared)).toBe(true);
    expect(await files.client.listObjects(bucket, fileNames.data(t, parseRef(expired.ref)), false, { IncludeVersion: true }).toArray()).toEqual([]);
    expect(await files.isHeld(t, held.ref)).toBe(true);
  });
});
