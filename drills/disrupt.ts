/**
 * Drills that disrupt a processor while inputs stream in: `kill -9` of the processor (then a
 * restart), or a service of the stack stopped or killed and started again (Kafka, Redis, MinIO,
 * the schema registry). The same inputs go, in the same order, to a reference lab whose
 * processor runs undisturbed. Then:
 *
 * - every input must have its answer (lost = inputs without one),
 * - outputs read twice must be copies under one ID (duplicated counts what a consumer dropping
 *   duplicates by ID drops; none may differ from its first copy),
 * - every input's answers, duplicates dropped, must equal the reference's, numbers (counts,
 *   spend) included,
 * - the Redis state must equal the reference's, key by key,
 * - for a service outage or a slot migration, the processor must have lived through it (no exit).
 */
import { execFile } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { endpointsEnv } from "../processors/runner/endpoints.ts";
import { isRedisCluster } from "../store/redis/client.ts";
import { answersById, conflicting, dumpState, duplicates, feed, openLab, OutputReader, producerOf, stateDifferences, unmatchedEarly, Worker, type Lab, type Services } from "./lab.ts";
import type { DrillRow } from "./report.ts";
import { reshard } from "./reshard.ts";
import { drillSubject, type SubjectName } from "./subjects.ts";

export type StackService = "kafka" | "redis" | "minio" | "registry";

export type Disruption =
  | { readonly kind: "kill9" }
  /** Another instance joins the group (odd times) or the oldest leaves it (even times): a rebalance mid-stream. */
  | { readonly kind: "rebalance" }
  /** Stop the service (SIGTERM, or SIGKILL with `kill`), keep it down `downMs`, start it again. */
  | { readonly kind: "outage"; readonly service: StackService; readonly kill: boolean; readonly downMs: number }
  /** Redis Cluster only: up to `slots` slots move from the fullest master to the emptiest (`redis-cli --cluster reshard`) while inputs keep coming. */
  | { readonly kind: "reshard"; readonly slots: number };

export interface DisruptOptions {
  readonly subject: SubjectName;
  readonly events: number;
  /** Inputs sent per second while the processor runs. */
  readonly rate: number;
  /** How many times the disruption happens, spread evenly over the inputs. */
  readonly times: number;
  readonly disruption: Disruption;
  /** Longest wait for the last answers after the inputs are all sent. */
  readonly drainMs?: number;
  readonly say?: (line: string) => void;
}

/** What a drill's worker is told: a stable instance name (so a restart fences what the killed one left open) and a short session. */
export function workerEnv(s: Services, lab: string, slot = 0): Record<string, string> {
  return { ...endpointsEnv(s.endpoints), OZ0_INSTANCE_ID: `drill-${lab}-${slot}`, OZ0_KAFKA_SESSION_TIMEOUT_MS: "6000", OZ0_PARTITIONS_CONCURRENTLY: "4" };
}

const exec = promisify(execFile);
const STACK = fileURLToPath(new URL("../stack/", import.meta.url));

/** Stops one service of the local stack (stack/down.sh --only), or kills it. */
export async function stopService(service: StackService, kill: boolean): Promise<void> {
  await exec("bash", [`${STACK}down.sh`, "--only", service, ...(kill ? ["--kill"] : [])], { timeout: 120_000 });
}

/** Starts whatever of the local stack is not running and waits until it answers (stack/up.sh). */
export async function startStack(): Promise<void> {
  await exec("bash", [`${STACK}up.sh`], { timeout: 600_000 });
}

export function describe(d: Disruption, times: number): string {
  if (d.kind === "kill9") return `kill -9 x${times}`;
  if (d.kind === "rebalance") return `rebalance x${times}`;
  if (d.kind === "reshard") return `reshard ${d.slots} slots x${times}`;
  return `${d.service} ${d.kill ? "killed" : "stopped"} ${(d.downMs / 1000).toFixed(0)} s x${times}`;
}

function command(o: DisruptOptions): string {
  const d = o.disruption;
  const base = `npm run drill -- ${d.kind} --subject ${o.subject} --events ${o.events} --rate ${o.rate} --times ${o.times}`;
  if (d.kind === "reshard") return `${base} --slots ${d.slots}`;
  return d.kind !== "outage" ? base : `${base} --service ${d.service}${d.kill ? " --kill" : ""} --down-seconds ${d.downMs / 1000}`;
}

interface RunResult {
  readonly restarts: number;
  /** Worker exits the drill did not cause. */
  readonly unplannedExits: number;
}

/** Feeds the lab while its worker runs, disrupting it `times` times; the worker still running is left in `workers`. */
async function run(s: Services, lab: Lab, messages: ReadonlyArray<{ key: string; value: Buffer }>, o: DisruptOptions, times: number, workers: Worker[]): Promise<RunResult> {
  const say = o.say ?? (() => {});
  const producer = producerOf(s.kafka);
  await producer.connect();
  let worker = new Worker(lab.subject.name, lab.lab, workerEnv(s, lab.lab));
  workers.push(worker);
  /** Instances in the group, oldest first (rebalance). */
  const members: Worker[] = [worker];
  let slots = 1;
  let restarts = 0;
  let unplannedExits = 0;
  let planned = false;
  const watch = (w: Worker): void =>
    void w.exited.then(() => {
      if (!planned) unplannedExits++;
    });
  watch(worker);
  try {
    await worker.ready;
    const at = Array.from({ length: times }, (_, k) => Math.floor(((k + 1) * messages.length) / (times + 1)));
    const disruptions: Array<Promise<void>> = [];
    let resharding: Promise<void> = Promise.resolve();
    await feed(producer, lab.input, messages, o.rate, async (sent) => {
      if (at.length === 0 || sent < (at[0] as number)) return;
      at.shift();
      const d = o.disruption;
      if (d.kind === "kill9") {
        // Killed mid-stream, not before it reads: a restarted worker first waits for its group.
        for (let waited = 0; worker.stats.in === 0 && waited < 30_000; waited += 100) await sleep(100);
        const seen = worker.stats.in;
        planned = true;
        await worker.kill9();
        planned = false;
        say(`  kill -9 after ${sent} sent (${seen} read by the worker); starting it again`);
        worker = new Worker(lab.subject.name, lab.lab, workerEnv(s, lab.lab));
        workers.push(worker);
        watch(worker);
        await worker.ready;
        restarts++;
      } else if (d.kind === "rebalance") {
        if (restarts % 2 === 0) {
          say(`  another instance joins the group after ${sent} sent`);
          const joining = new Worker(lab.subject.name, lab.lab, workerEnv(s, lab.lab, slots++));
          workers.push(joining);
          watch(joining);
          members.push(joining);
          await joining.ready;
        } else {
          const leaving = members.shift();
          say(`  the oldest instance leaves the group after ${sent} sent`);
          planned = true;
          await leaving?.stop();
          planned = false;
        }
        restarts++;
      } else if (d.kind === "reshard") {
        restarts++;
        say(`  moving ${d.slots} slots after ${sent} sent`);
        // The inputs keep coming while the slots move, one migration after the other.
        resharding = resharding.then(async () => {
          const moved = await reshard(s.redis, s.endpoints, d.slots);
          say(`  ${moved.slots} slots moved from ${moved.from} to ${moved.to} in ${(moved.ms / 1000).toFixed(1)} s`);
        });
        // Awaited with the others once the inputs are sent; marked handled so a failure meanwhile is not unhandled.
        resharding.catch(() => undefined);
        disruptions.push(resharding);
      } else {
        say(`  ${d.kill ? "killing" : "stopping"} ${d.service} after ${sent} sent, for ${d.downMs / 1000} s`);
        await stopService(d.service, d.kill);
        // The inputs keep coming while the service is down (a broker that is down holds them back).
        disruptions.push(
          (async () => {
            await sleep(d.downMs);
            const t = Date.now();
            await startStack();
            say(`  ${d.service} is back (start took ${((Date.now() - t) / 1000).toFixed(0)} s)`);
          })(),
        );
      }
    });
    await Promise.all(disruptions);
    return { restarts, unplannedExits };
  } finally {
    await producer.disconnect().catch(() => undefined);
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

export async function disruptDrill(s: Services, o: DisruptOptions): Promise<DrillRow> {
  const say = o.say ?? (() => {});
  if (o.disruption.kind === "outage" && o.disruption.service === "redis" && isRedisCluster(s.endpoints)) {
    throw new Error("the Redis outage drill stops the local stack's single Redis (stack/down.sh --only redis), but this drill's Redis is a cluster: run it with OZ0_REDIS_URL naming the single node");
  }
  if (o.disruption.kind === "reshard" && !isRedisCluster(s.endpoints)) {
    throw new Error("the reshard drill moves slots of a Redis Cluster, but OZ0_REDIS_URL names one node: start the stack's cluster (bash stack/up.sh --redis-cluster) and run it with OZ0_STACK_REDIS=cluster");
  }
  const subject = await drillSubject(o.subject);
  const events = subject.kind.make(o.events, `dr-${Date.now().toString(36)}`, 7);
  const messages = events.map((e) => ({ key: e.key, value: s.serde.encode(subject.kind.schema, e.value) }));
  const want = events.filter((e) => e.answered).map((e) => e.value.id);
  const started = Date.now();
  const reference = await openLab(s, subject);
  const drill = await openLab(s, subject);
  // The drill's outputs also as a runtime client takes them: before their commit (aborted ones too).
  const readers = [new OutputReader(s.kafka, s.serde, reference), new OutputReader(s.kafka, s.serde, drill), new OutputReader(s.kafka, s.serde, drill, { uncommitted: true })] as const;
  const workers: Worker[] = [];
  try {
    await Promise.all(readers.map((r) => r.start()));
    say(`${o.subject}: reference run (undisturbed), ${messages.length} inputs at ${o.rate}/s`);
    await run(s, reference, messages, { ...o, times: 0 }, 0, workers);
    const refMissing = await readers[0].waitFor(want, o.drainMs ?? 90_000);
    await stopAll(workers);
    say(`${o.subject}: drill run, ${describe(o.disruption, o.times)}`);
    const result = await run(s, drill, messages, o, o.times, workers);
    const lost = await readers[1].waitFor(want, o.drainMs ?? 90_000);
    if (lost > 0) for (const w of workers) say(`  a worker's last log lines:\n${w.log.split("\n").slice(-12).join("\n")}`);
    // Late duplicates would arrive after the answers: give them a moment to show.
    await sleep(1_500);
    const peakRss = await stopAll(workers);
    const ref = answersById(readers[0].outputs);
    const got = answersById(readers[1].outputs);
    let differing = 0;
    for (const id of want) {
      if (JSON.stringify(ref.get(id) ?? []) !== JSON.stringify(got.get(id) ?? [])) differing++;
    }
    const refState = await dumpState(s.redis, reference);
    const drillState = await dumpState(s.redis, drill);
    const stateDiff = stateDifferences(refState, drillState);
    for (const key of stateDiff.slice(0, 2)) say(`  ${key}: reference ${(refState.get(key) ?? "(none)").slice(0, 300)} / drill ${(drillState.get(key) ?? "(none)").slice(0, 300)}`);
    const checks: Record<string, boolean> = {
      "reference complete": refMissing === 0,
      "no two outputs of one ID differ": conflicting(readers[1].outputs) === 0,
      "answers read before their commit are the committed ones": unmatchedEarly(readers[2].outputs, readers[1].outputs) === 0,
      "answers equal the reference": differing === 0,
      "Redis state equals the reference": stateDiff.length === 0,
    };
    if (o.disruption.kind === "kill9") checks[`restarted ${o.times} times`] = result.restarts === o.times;
    else if (o.disruption.kind === "rebalance") checks[`${o.times} rebalances`] = result.restarts === o.times && result.unplannedExits === 0;
    else if (o.disruption.kind === "reshard") checks[`${o.times} slot migrations, the processor alive`] = result.restarts === o.times && result.unplannedExits === 0;
    else checks["the processor lived through it"] = result.unplannedExits === 0;
    return {
      drill: describe(o.disruption, o.times),
      subject: o.subject,
      inputs: messages.length,
      answers: readers[1].outputs.filter((x) => !x.deadLetter).length,
      lost,
      duplicated: duplicates(readers[1].outputs),
      deadLettered: readers[1].outputs.filter((x) => x.deadLetter).length,
      peakRssMb: Math.round(peakRss / 1_048_576),
      checks,
      details: [
        ...(refMissing > 0 ? [`the reference left ${refMissing} inputs unanswered`] : []),
        ...(differing > 0 ? [`${differing} inputs answered differently from the reference`] : []),
        ...(unmatchedEarly(readers[2].outputs, readers[1].outputs) > 0 ? [`${unmatchedEarly(readers[2].outputs, readers[1].outputs)} outputs read before their commit were not committed as read`] : []),
        ...(stateDiff.length > 0 ? [`${stateDiff.length} Redis keys differ, such as ${stateDiff.slice(0, 3).join(", ")}`] : []),
        ...(result.unplannedExits > 0 ? [`the processor exited ${result.unplannedExits} times on its own`] : []),
      ],
      seconds: (Date.now() - started) / 1000,
      command: command(o),
    };
  } finally {
    await stopAll(workers);
    await Promise.all(readers.map((r) => r.stop().catch(() => undefined)));
    await reference.close();
    await drill.close();
  }
}
