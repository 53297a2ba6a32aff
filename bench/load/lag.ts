/**
 * Consumer lag over time: every period, for each watched consumer group, the messages of its
 * input not yet committed (summed over partitions), as `npm start` and `/metrics` count it
 * (transaction markers included, so a drained partition written in transactions shows 1).
 */
import type { Admin } from "kafkajs";

export interface WatchedGroup {
  /** What the chart and the report call it: a processor's name, or `passthrough`. */
  readonly name: string;
  readonly group: string;
  readonly topic: string;
}

export interface LagSample {
  /** ms since epoch. */
  readonly at: number;
  readonly lags: Readonly<Record<string, number>>;
}

/** One round: every topic's ends once, every group's committed offsets. */
export async function sampleLag(admin: Admin, watched: readonly WatchedGroup[]): Promise<LagSample> {
  const at = Date.now();
  const topics = [...new Set(watched.map((w) => w.topic))];
  const ends = new Map(await Promise.all(topics.map(async (t) => [t, await admin.fetchTopicOffsets(t)] as const)));
  const lags: Record<string, number> = {};
  await Promise.all(
    watched.map(async (w) => {
      const committed = await admin.fetchOffsets({ groupId: w.group, topics: [w.topic] });
      const done = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset === "-1" ? "0" : p.offset)]));
      lags[w.name] = (ends.get(w.topic) ?? []).reduce((sum, p) => sum + Number(BigInt(p.high) - (done.get(p.partition) ?? 0n)), 0);
    }),
  );
  return { at, lags };
}

/** Samples every `periodMs` until stopped; a round still in flight is not overlapped, a failed one is skipped. */
export class LagSampler {
  readonly samples: LagSample[] = [];
  failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private readonly admin: Admin;
  private readonly watched: readonly WatchedGroup[];

  constructor(admin: Admin, watched: readonly WatchedGroup[]) {
    this.admin = admin;
    this.watched = watched;
  }

  start(periodMs = 1_000): void {
    const round = (): void => {
      if (this.inFlight) return;
      this.inFlight = sampleLag(this.admin, this.watched)
        .then((s) => void this.samples.push(s), () => void this.failures++)
        .finally(() => (this.inFlight = undefined));
    };
    round();
    this.timer = setInterval(round, periodMs);
  }

  /** Stops, after one last round so the end of the run shows. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.inFlight;
    await sampleLag(this.admin, this.watched).then((s) => void this.samples.push(s), () => void this.failures++);
  }

  /** The last lag seen of each watched group. */
  last(): Readonly<Record<string, number>> {
    return this.samples[this.samples.length - 1]?.lags ?? {};
  }
}
