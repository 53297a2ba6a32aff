/**
 * Asks the broker, every few seconds, how far behind each processor's group is (consumer lag,
 * from committed offsets and the input's ends, each group's and each topic's asked once a round) and whether the group is stable with members.
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

/** The offsets `group` committed on each of `topics`, summed over partitions: one ask of the group's coordinator. */
export async function committedTotals(admin: Admin, group: string, topics: readonly string[]): Promise<Map<string, number>> {
  const committed = await admin.fetchOffsets({ groupId: group, topics: [...topics] });
  return new Map(committed.map((t) => [t.topic, t.partitions.reduce((sum, p) => sum + (p.offset === "-1" ? 0 : Number(p.offset)), 0)]));
}

/**
 * Each watched processor's lag from one round's answers: its group's committed total on its
 * input and the input's end total. A topic or group the round has no answer for gives NaN.
 */
export function lagsOf(watched: readonly Watched[], committed: ReadonlyMap<string, ReadonlyMap<string, number>>, ends: ReadonlyMap<string, number>): Map<string, number> {
  return new Map(watched.map((w) => [w.name, (ends.get(w.input) ?? NaN) - (committed.get(w.group)?.get(w.input) ?? NaN)]));
}

/** The topics each group is watched on, each once. */
export function topicsByGroup(watched: readonly Watched[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const w of watched) {
    const list = out.get(w.group);
    if (!list) out.set(w.group, [w.input]);
    else if (!list.includes(w.input)) list.push(w.input);
  }
  return out;
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
  private running = false;
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

  /**
   * Asks once now, then a period after each round until `stop`. A round asked for by `refresh`
   * (the progress report's, every few seconds) puts the next one off, so two callers on the
   * same period do not ask twice.
   */
  start(): void {
    if (this.running) return;
    this.running = true;
    void this.refresh();
  }

  /** One round of asks; concurrent calls share the round in flight. */
  refresh(): Promise<void> {
    this.inFlight ??= this.round().finally(() => {
      this.inFlight = undefined;
      this.schedule();
    });
    return this.inFlight;
  }

  private schedule(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.running) return;
    this.timer = setTimeout(() => void this.refresh(), this.opts.periodMs ?? 5_000);
    this.timer.unref();
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
      // One ask of committed offsets a group and one of ends a topic, however many processors
      // share them: the processors of a group read a handful of topics between them.
      const byGroup = topicsByGroup(this.watched);
      const topics = [...new Set(this.watched.map((w) => w.input))];
      const [groups, committed, ends] = await Promise.all([
        admin.describeGroups([...byGroup.keys()]),
        Promise.all([...byGroup].map(async ([group, ts]) => [group, await committedTotals(admin, group, ts)] as const)),
        Promise.all(topics.map(async (t) => [t, await endTotal(admin, t)] as const)),
      ]);
      for (const [name, lag] of lagsOf(this.watched, new Map(committed), new Map(ends))) this.lags.set(name, lag);
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
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight;
  }
}
