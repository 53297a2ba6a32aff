/**
 * Batches committed together. A consumer hands out the batches of one fetch (one batch a
 * partition) to be handled at once, and fetches again only once every one of them is done. So
 * their outputs and offsets can go to the broker in one transaction instead of one a batch: a
 * commit starts when no batch is still being handled, or when the oldest batch waiting has
 * waited `intervalMs` (a slow batch, such as results offloaded to a slow store, does not hold
 * the others' answers back longer than that), or when the outputs waiting outgrow `maxBytes`.
 * One commit runs at a time; batches handed in meanwhile wait for the next.
 *
 * This is the part without Kafka: `commit` is given the batches and does the transaction (or,
 * without exactly-once, the sends and the offset commit).
 */
import type { OutMessage } from "./transport.ts";

/** A batch's place: its partition and last offset. */
export interface BatchAt {
  readonly topic: string;
  readonly partition: number;
  /** The batch's last offset: the group's offset becomes the one after it. */
  readonly last: string;
}

export interface Handed extends BatchAt {
  readonly out: readonly OutMessage[];
  /** True once the partition moved to another member: the batch is left out, not committed. */
  readonly isStale: () => boolean;
}

/** One commit's batches, in the order handed in. */
export type CommitFn = (batches: readonly Handed[]) => Promise<void>;

export interface CommitsOptions {
  readonly commit: CommitFn;
  /** Longest time a batch handed in waits for the others before a commit starts without them. */
  readonly intervalMs: number;
  /** A commit starts at once when the outputs waiting add up to this many bytes. */
  readonly maxBytes: number;
}

interface Waiting {
  readonly batch: Handed;
  readonly at: number;
  resolve(committed: boolean): void;
  reject(err: unknown): void;
}

export interface CommitsStats {
  /** Commits made (transactions, with exactly-once). */
  commits: number;
  /** Batches committed in them. */
  batches: number;
  /** Batches left out because their partition had moved on. */
  stale: number;
}

function outBytes(out: readonly OutMessage[]): number {
  let n = 0;
  for (const m of out) n += (m.value?.length ?? 0) + (m.key?.length ?? 0);
  return n;
}

export class Commits {
  private readonly o: CommitsOptions;
  private handling = 0;
  private waiting: Waiting[] = [];
  private waitingBytes = 0;
  private running: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  readonly stats: CommitsStats = { commits: 0, batches: 0, stale: 0 };

  constructor(o: CommitsOptions) {
    this.o = o;
  }

  /** True while no commit runs and no batch handed in waits for one. */
  get quiet(): boolean {
    return this.running === null && this.waiting.length === 0;
  }

  /** A batch is being handled: a commit waits for it (up to the interval). */
  begin(): void {
    this.handling++;
  }

  /** A batch begun will not be handed in (it failed): the others need not wait for it. */
  abandon(): void {
    this.handling--;
    this.consider();
  }

  /**
   * Hands in a begun batch's outputs. Resolves true once they and its offset are committed,
   * false when the batch was left out as stale; rejects when its commit failed.
   */
  hand(batch: Handed): Promise<boolean> {
    this.handling--;
    return new Promise<boolean>((resolve, reject) => {
      this.waiting.push({ batch, at: Date.now(), resolve, reject });
      this.waitingBytes += outBytes(batch.out);
      this.consider();
    });
  }

  private consider(): void {
    if (this.running || this.waiting.length === 0) return;
    const first = this.waiting[0] as Waiting;
    const waited = Date.now() - first.at;
    if (this.handling <= 0 || this.waitingBytes >= this.o.maxBytes || waited >= this.o.intervalMs) {
      this.start();
      return;
    }
    this.timer ??= setTimeout(() => {
      this.timer = null;
      this.consider();
    }, this.o.intervalMs - waited);
  }

  private start(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const taken = this.waiting;
    this.waiting = [];
    this.waitingBytes = 0;
    const fresh: Waiting[] = [];
    for (const w of taken) {
      if (w.batch.isStale()) {
        this.stats.stale++;
        w.resolve(false);
      } else fresh.push(w);
    }
    if (fresh.length === 0) {
      this.consider();
      return;
    }
    this.running = this.o.commit(fresh.map((w) => w.batch)).then(
      () => {
        this.stats.commits++;
        this.stats.batches += fresh.length;
        for (const w of fresh) w.resolve(true);
      },
      (err: unknown) => {
        for (const w of fresh) w.reject(err);
      },
    );
    void this.running.finally(() => {
      this.running = null;
      this.consider();
    });
  }
}

/** The offsets to commit for these batches: each partition's next offset, grouped by topic. */
export function offsetsOf(batches: readonly Handed[]): Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }> {
  const byTopic = new Map<string, Map<number, bigint>>();
  for (const b of batches) {
    let parts = byTopic.get(b.topic);
    if (!parts) byTopic.set(b.topic, (parts = new Map<number, bigint>()));
    const next = BigInt(b.last) + 1n;
    const had = parts.get(b.partition);
    if (had === undefined || next > had) parts.set(b.partition, next);
  }
  return [...byTopic].map(([topic, parts]) => ({ topic, partitions: [...parts].map(([partition, offset]) => ({ partition, offset: offset.toString() })) }));
}

/** A group's committed offsets as kafkajs's `admin.fetchOffsets` gives them, by topic. */
export type FetchedOffsets = ReadonlyArray<{ topic: string; partitions: ReadonlyArray<{ partition: number; offset: string }> }>;

/**
 * Whether a commit whose answer never came landed after all, from the group's offsets as read
 * once its transaction is completed: `"all"` when each batch's partition is committed past the
 * batch's last offset, `"none"` when none is, `"some"` otherwise (a transaction commits
 * whole, so "some" means another member committed a partition since: the batches are handled
 * again, as after a commit that failed).
 */
export function landedIn(batches: readonly BatchAt[], fetched: FetchedOffsets): "all" | "none" | "some" {
  const committed = new Map<string, bigint>();
  for (const t of fetched) for (const p of t.partitions) if (/^\d+$/.test(p.offset)) committed.set(`${t.topic}\u0000${p.partition}`, BigInt(p.offset));
  let landed = 0;
  for (const b of batches) {
    const at = committed.get(`${b.topic}\u0000${b.partition}`);
    if (at !== undefined && at > BigInt(b.last)) landed++;
  }
  return landed === batches.length ? "all" : landed === 0 ? "none" : "some";
}
