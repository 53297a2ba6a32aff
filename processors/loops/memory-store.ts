/** The loop state in memory, for the test driver: the same semantics as the Redis store. */
import { flagsFromHash, timerEntries, timerMember, type Lane, type LaneRead, type LaneSnapshot, type LaneWrite, type LoopStore, type TimerEntry } from "./store.ts";

/** A run's state is kept per tenant and run, as in Redis: the key of `lanes` (after the lane) and `flags`. */
export function runKey(r: { readonly tenant: string; readonly run: string }): string {
  return `${encodeURIComponent(r.tenant)}/${r.run}`;
}

export class MemoryLoopStore implements LoopStore {
  readonly lanes = new Map<string, Map<string, string>>();
  readonly flags = new Map<string, Map<string, string>>();
  /** Deadlines and escalation steps the timer watches, by member. */
  readonly deadlines = new Map<string, TimerEntry>();
  /** LOOP-9 counts by `<day>|<tenant>|<plugin>|<tool>`. */
  readonly counts = new Map<string, number>();
  private readonly counted = new Set<string>();

  private hash(map: Map<string, Map<string, string>>, key: string): Map<string, string> {
    let h = map.get(key);
    if (!h) map.set(key, (h = new Map<string, string>()));
    return h;
  }

  read(lane: Lane, reads: readonly LaneRead[]): Promise<LaneSnapshot[]> {
    return Promise.resolve(
      reads.map((r) => {
        const h = this.lanes.get(`${lane}|${runKey(r)}`) ?? new Map<string, string>();
        const memos = new Map<string, string>();
        for (const o of r.offsets) {
          const m = h.get(`memo:${r.source}:${o}`);
          if (m !== undefined) memos.set(o, m);
        }
        return { state: h.get("state") ?? null, at: h.get(`at:${r.source}`) ?? null, memos, flags: flagsFromHash(Object.fromEntries(this.flags.get(runKey(r)) ?? [])) };
      }),
    );
  }

  write(lane: Lane, writes: readonly LaneWrite[]): Promise<void> {
    for (const w of writes) {
      const h = this.hash(this.lanes, `${lane}|${runKey(w)}`);
      const seen = h.get(`at:${w.source}`);
      if (seen === undefined || Number(seen) < Number(w.at)) {
        h.set("state", w.state);
        h.set(`at:${w.source}`, w.at);
        const prefix = `memo:${w.source}:`;
        for (const field of [...h.keys()]) if (field.startsWith(prefix) && Number(field.slice(prefix.length)) < Number(w.from)) h.delete(field);
        for (const [offset, outcome] of w.memos) h.set(`${prefix}${offset}`, outcome);
        const flags = this.hash(this.flags, runKey(w));
        for (const [field, value] of w.flags) if (!flags.has(field)) flags.set(field, value);
      }
      for (const e of w.deadlines.flatMap(timerEntries)) if (!this.deadlines.has(timerMember(e))) this.deadlines.set(timerMember(e), e);
      for (const e of w.settled.flatMap(timerEntries)) this.deadlines.delete(timerMember(e));
      for (const c of w.counts) {
        if (this.counted.has(`${c.day}|${c.id}`)) continue;
        this.counted.add(`${c.day}|${c.id}`);
        const key = `${c.day}|${c.tenant}|${c.plugin}|${c.tool}`;
        this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
      }
    }
    return Promise.resolve();
  }

  dueDeadlines(now: number, limit: number): Promise<TimerEntry[]> {
    const due = [...this.deadlines.values()].filter((d) => d.at <= now).sort((a, b) => a.at - b.at);
    return Promise.resolve(due.slice(0, limit));
  }

  /** Every deadline and escalation step watched, soonest first (as RedisLoopStore.watched). */
  watched(): Promise<TimerEntry[]> {
    return Promise.resolve([...this.deadlines.values()].sort((a, b) => a.at - b.at));
  }

  dropDeadlines(entries: readonly TimerEntry[]): Promise<void> {
    for (const e of entries) this.deadlines.delete(timerMember(e));
    return Promise.resolve();
  }
}
