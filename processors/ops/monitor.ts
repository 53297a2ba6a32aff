/**
 * Asks the broker, every few seconds, how far behind each processor's group is (consumer lag,
 * from committed offsets and the input's ends) and whether the group is stable with members.
 * With `topics`, it also reads the Kafka cluster each round (`kafka-cluster.ts`: brokers that do
 * not answer, those topics' partitions under-replicated or without a leader) for the health.
 * The answers feed the metrics and the health; a failed ask is logged and tried next time.
 */
import type { Admin } from "kafkajs";
import type { Health } from "./health.ts";
import { clusterHealth, readCluster } from "./kafka-cluster.ts";
import type { Logger } from "../runner/log.ts";

export interface Watched {
  readonly name: string;
  readonly group: string;
  readonly input: string;
}

/** The offsets `group` committed on `topic`, summed over its partitions (a partition with none counts 0). */
export async function committedTotal(admin: Admin, group: string, topic: string): Promise<number> {
  const [committed] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  return (committed?.partitions ?? []).reduce((sum, p) => sum + (p.offset === "-1" ? 0 : Number(p.offset)), 0);
}

/** The end offsets of `topic`, summed over its partitions. */
export async function endTotal(admin: Admin, topic: string): Promise<number> {
  return (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
}

/** Messages not yet consumed by `group`, summed over the partitions of `topic`. */
export async function consumerLag(admin: Admin, group: string, topic: string): Promise<number> {
  const [done, end] = await Promise.all([committedTotal(admin, group, topic), endTotal(admin, topic)]);
  return end - done;
}

export interface MonitorOptions {
  admin: Admin;
  health?: Health;
  log: Logger;
  /** How often to ask. @default 5000 */
  periodMs?: number;
  /** The pipeline's topics, whose partitions the health reports on (with the brokers); none read when absent. */
  topics?: readonly string[];
}

export class Monitor {
  private readonly watched: Watched[] = [];
  private readonly lags = new Map<string, number>();
  private readonly opts: MonitorOptions;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private failures = 0;
  /** Each broker's address as last listed, so one the metadata drops is still named. */
  private readonly known = new Map<number, string>();

  constructor(opts: MonitorOptions) {
    this.opts = opts;
  }

  watch(w: Watched): void {
    this.watched.push(w);
  }

  /** The lag last seen for a processor; NaN until the first answer. */
  lag(name: string): number {
    return this.lags.get(name) ?? NaN;
  }

  /** Asks once now, then every period until `stop`. */
  start(): void {
    if (this.timer) return;
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.opts.periodMs ?? 5_000);
    this.timer.unref();
  }

  /** One round of asks; concurrent calls share the round in flight. */
  refresh(): Promise<void> {
    this.inFlight ??= this.round().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async round(): Promise<void> {
    if (this.watched.length === 0) return;
    await Promise.all([this.groupsRound(), this.clusterRound()]);
  }

  /** The cluster's brokers and the pipeline's partitions, for the health. */
  private async clusterRound(): Promise<void> {
    const { admin, health, topics } = this.opts;
    if (!health || !topics) return;
    try {
      const snapshot = await readCluster(admin, topics, this.known);
      for (const b of snapshot.brokers) this.known.set(b.nodeId, b.address);
      health.clusterSeen(clusterHealth(snapshot));
    } catch {
      // The group round says, once, that the broker does not answer.
    }
  }

  private async groupsRound(): Promise<void> {
    const { admin, health, log } = this.opts;
    try {
      const [groups] = await Promise.all([
        admin.describeGroups(this.watched.map((w) => w.group)),
        ...this.watched.map(async (w) => this.lags.set(w.name, await consumerLag(admin, w.group, w.input))),
      ]);
      const byId = new Map(groups.groups.map((g) => [g.groupId, g]));
      for (const w of this.watched) {
        const g = byId.get(w.group);
        health?.groupSeen(w.name, { state: g?.state ?? "Unknown", members: g?.members.length ?? 0 });
      }
      if (this.failures > 0) log.info("broker answers the monitor again", { failedRounds: this.failures });
      this.failures = 0;
    } catch (err) {
      this.failures++;
      // The first failure and then one in ten: a broker that is away is said once, not every 5 s.
      if (this.failures % 10 === 1) log.warn("could not read consumer lag and group states", { error: err instanceof Error ? err.message : String(err), failedRounds: this.failures });
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.inFlight;
  }
}
