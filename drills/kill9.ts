/**
 * The kill -9 drill: a processor is killed with SIGKILL while inputs stream in, and started
 * again, as often as asked. The same inputs go, in the same order, to a reference lab whose
 * processor is never interrupted. Then:
 *
 * - every input must have its answer (lost = inputs without one),
 * - no output may be read twice (duplicated = outputs a consumer dropping duplicates by ID drops),
 * - every input's answers must equal the reference's, numbers (counts, spend) included,
 * - the Redis state must equal the reference's, key by key.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { answersById, dumpState, duplicates, feed, openLab, OutputReader, producerOf, stateDifferences, Worker, type Lab, type Services } from "./lab.ts";
import { drillSubject, type SubjectName } from "./subjects.ts";
import type { DrillRow } from "./report.ts";

export interface Kill9Options {
  readonly subject: SubjectName;
  readonly events: number;
  /** Inputs sent per second while the processor runs. */
  readonly rate: number;
  readonly kills: number;
  /** Longest wait for the last answers after the inputs are all sent. */
  readonly drainMs?: number;
  readonly say?: (line: string) => void;
}

/** What a drill's worker is told: a stable instance name (so a restart fences what the killed one left open) and a short session. */
export function workerEnv(lab: string): Record<string, string> {
  return { OZ0_INSTANCE_ID: `drill-${lab}`, OZ0_KAFKA_SESSION_TIMEOUT_MS: "6000", OZ0_PARTITIONS_CONCURRENTLY: "4" };
}

/** Feeds the lab while its worker runs, killing and restarting it `kills` times; returns the worker still running. */
async function run(s: Services, lab: Lab, messages: ReadonlyArray<{ key: string; value: Buffer }>, rate: number, kills: number, say: (l: string) => void, workers: Worker[]): Promise<{ peakRss: number; restarts: number }> {
  const producer = producerOf(s.kafka);
  await producer.connect();
  let worker = new Worker(lab.subject.name, lab.lab, workerEnv(lab.lab));
  workers.push(worker);
  let peakRss = 0;
  let restarts = 0;
  try {
    await worker.ready;
    const killAt = Array.from({ length: kills }, (_, k) => Math.floor(((k + 1) * messages.length) / (kills + 1)));
    await feed(producer, lab.input, messages, rate, async (sent) => {
      if (killAt.length > 0 && sent >= (killAt[0] as number)) {
        killAt.shift();
        const seen = worker.stats.in;
        await worker.kill9();
        peakRss = Math.max(peakRss, worker.peakRss);
        say(`  kill -9 after ${sent} sent (${seen} read by the worker); starting it again`);
        worker = new Worker(lab.subject.name, lab.lab, workerEnv(lab.lab));
        workers.push(worker);
        await worker.ready;
        restarts++;
      }
    });
    return { peakRss: Math.max(peakRss, worker.peakRss), restarts };
  } finally {
    await producer.disconnect();
  }
}

async function stopAll(workers: Worker[]): Promise<number> {
  let peak = 0;
  for (const w of workers.splice(0)) {
    await w.stop().catch(() => undefined);
    peak = Math.max(peak, w.peakRss);
  }
  return peak;
}

export async function kill9Drill(s: Services, o: Kill9Options): Promise<DrillRow> {
  const say = o.say ?? (() => {});
  const subject = await drillSubject(o.subject);
  const events = subject.kind.make(o.events, `k9-${Date.now().toString(36)}`, 7);
  const messages = events.map((e) => ({ key: e.key, value: s.serde.encode(subject.kind.schema, e.value) }));
  const want = events.filter((e) => e.answered).map((e) => e.value.id);
  const started = Date.now();
  const reference = await openLab(s, subject);
  const drill = await openLab(s, subject);
  const readers = [new OutputReader(s.kafka, s.serde, reference), new OutputReader(s.kafka, s.serde, drill)] as const;
  const workers: Worker[] = [];
  try {
    await Promise.all(readers.map((r) => r.start()));
    say(`${o.subject}: reference run (uninterrupted), ${messages.length} inputs at ${o.rate}/s`);
    await run(s, reference, messages, o.rate, 0, say, workers);
    const refMissing = await readers[0].waitFor(want, o.drainMs ?? 60_000);
    await stopAll(workers);
    say(`${o.subject}: drill run, ${o.kills} kill -9`);
    const { restarts } = await run(s, drill, messages, o.rate, o.kills, say, workers);
    const lost = await readers[1].waitFor(want, o.drainMs ?? 60_000);
    // Late duplicates would arrive after the answers: give them a moment to show.
    await sleep(1_500);
    const peakRss = await stopAll(workers);
    const ref = answersById(readers[0].outputs);
    const got = answersById(readers[1].outputs);
    let differing = 0;
    for (const id of want) {
      if (JSON.stringify(ref.get(id) ?? []) !== JSON.stringify(got.get(id) ?? [])) differing++;
    }
    const stateDiff = stateDifferences(await dumpState(s.redis, reference), await dumpState(s.redis, drill));
    const row: DrillRow = {
      drill: `kill -9 x${o.kills}`,
      subject: o.subject,
      inputs: messages.length,
      answers: readers[1].outputs.filter((x) => !x.deadLetter).length,
      lost,
      duplicated: duplicates(readers[1].outputs),
      deadLettered: readers[1].outputs.filter((x) => x.deadLetter).length,
      peakRssMb: Math.round(peakRss / 1_048_576),
      checks: {
        "reference complete": refMissing === 0,
        "answers equal the reference": differing === 0,
        "Redis state equals the reference": stateDiff.length === 0,
        [`restarted ${o.kills} times`]: restarts === o.kills,
      },
      details: [
        ...(differing > 0 ? [`${differing} inputs answered differently from the reference`] : []),
        ...(stateDiff.length > 0 ? [`${stateDiff.length} Redis keys differ, such as ${stateDiff.slice(0, 3).join(", ")}`] : []),
      ],
      seconds: (Date.now() - started) / 1000,
      command: `npm run drill -- kill9 --subject ${o.subject} --events ${o.events} --rate ${o.rate} --kills ${o.kills}`,
    };
    return row;
  } finally {
    await stopAll(workers);
    await Promise.all(readers.map((r) => r.stop().catch(() => undefined)));
    await reference.close();
    await drill.close();
  }
}
