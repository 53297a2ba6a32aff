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
 * - for a service outage or a slot migration, the processor must have lived through it (no exit),
 * - for a broker lost or restarted, no output may be committed twice (a commit whose answer was
 *   lost with the broker is settled by the group's offsets), and the commits in doubt are counted.
 *
 * On the Kafka cluster of three brokers (`OZ0_STACK_KAFKA=cluster`), a broker is SIGKILLed and
 * started again (`broker-loss`: the one leading most of the lab's partitions, or the one
 * coordinating the worker's transactions), or all three are restarted one at a time (`rolling`).
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
import { masterNodes } from "../store/redis/slots.ts";
import { drillSubject, type SubjectName } from "./subjects.ts";
import { clusterBrokers, leaderOfMost, replicationProblems, requireStackCluster, startBrokers, stopBroker, transactionCoordinator, untilInSync, type ClusterBroker } from "./brokers.ts";

export type StackService = "kafka" | "redis" | "minio" | "registry";

/** The disruptions of Redis itself, and the subjects that keep state there to disrupt. */
export const REDIS_DISRUPTIONS: ReadonlySet<string> = new Set(["plant", "script-flush", "oom"]);
export const REDIS_SUBJECTS: readonly SubjectName[] = ["loop-calls", "limits-model-calls"];

export type Disruption =
  | { readonly kind: "kill9" }
  /** Another instance joins the group (odd times) or the oldest leaves it (even times): a rebalance mid-stream. */
  | { readonly kind: "rebalance" }
  /** Stop the service (SIGTERM, or SIGKILL with `kill`), keep it down `downMs`, start it again. */
  | { readonly kind: "outage"; readonly service: StackService; readonly kill: boolean; readonly downMs: number }
  /** Redis Cluster only: up to `slots` slots move from the fullest master to the emptiest (`redis-cli --cluster reshard`) while inputs keep coming. */
  | { readonly kind: "reshard"; readonly slots: number }
  /**
   * A string planted with SET over one run's (or tree's) state, as an operator's mistake or a key
   * of another version would be: the commands on it fail with WRONGTYPE, for good. Only that
   * key's inputs may be dead-lettered; every other input is answered as in the reference.
   */
  | { readonly kind: "plant" }
  /** SCRIPT FLUSH, as a failover that lost the script cache: the scripts are loaded again, nothing lost. */
  | { readonly kind: "script-flush" }
  /** Redis refuses writes with OOM (maxmemory set below its use, noeviction) for `downMs`: unhealthy, then ready again, nothing lost. */
  | { readonly kind: "oom"; readonly downMs: number }
  /**
   * Kafka cluster only: SIGKILL of the broker leading most of the lab's partitions (`leader`) or
   * coordinating the worker's transactional ID (`coordinator`), kept down `downMs`, started again
   * and waited for until it is back in the ISR of every partition it replicates.
   */
  | { readonly kind: "broker-loss"; readonly target: BrokerTarget; readonly downMs: number }
  /** Kafka cluster only: each broker in turn SIGTERMed, started again, and back in the ISR of every partition before the next. */
  | { readonly kind: "rolling" };

export type BrokerTarget = "leader" | "coordinator";
export const BROKER_DISRUPTIONS: ReadonlySet<string> = new Set(["broker-loss", "rolling"]);

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
  // A short retry bound, so a dependency that fails for a drill's few seconds shows as not ready.
  return { ...endpointsEnv(s.endpoints), OZ0_INSTANCE_ID: workerInstance(lab, slot), OZ0_KAFKA_SESSION_TIMEOUT_MS: "6000", OZ0_PARTITIONS_CONCURRENTLY: "4", OZ0_RETRY_UNHEALTHY_AFTER_MS: "2000" };
}

function workerInstance(lab: string, slot = 0): string {
  return `drill-${lab}-${slot}`;
}

/** The transactional ID of a lab's first worker (the transport's `<group>.<instance>.<index>`). */
export function workerTransactionalId(lab: Lab, slot = 0): string {
  return `${lab.groupId}.${workerInstance(lab.lab, slot)}.0`;
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
  if (d.kind === "plant") return `WRONGTYPE key planted x${times}`;
  if (d.kind === "script-flush") return `SCRIPT FLUSH x${times}`;
  if (d.kind === "oom") return `Redis OOM ${(d.downMs / 1000).toFixed(0)} s x${times}`;
  if (d.kind === "broker-loss") return `broker (${d.target}) killed ${(d.downMs / 1000).toFixed(0)} s x${times}`;
  if (d.kind === "rolling") return `rolling restart of 3 brokers x${times}`;
  return `${d.service} ${d.kill ? "killed" : "stopped"} ${(d.downMs / 1000).toFixed(0)} s x${times}`;
}

function command(o: DisruptOptions): string {
  const d = o.disruption;
  const base = `npm run drill -- ${d.kind} --subject ${o.subject} --events ${o.events} --rate ${o.rate} --times ${o.times}`;
  if (d.kind === "reshard") return `${base} --slots ${d.slots}`;
  if (d.kind === "oom") return `${base} --down-seconds ${d.downMs / 1000}`;
  if (d.kind === "broker-loss") return `OZ0_STACK_KAFKA=cluster ${base} --target ${d.target} --down-seconds ${d.downMs / 1000}`;
  if (d.kind === "rolling") return `OZ0_STACK_KAFKA=cluster ${base}`;
  return d.kind !== "outage" ? base : `${base} --service ${d.service}${d.kill ? " --kill" : ""} --down-seconds ${d.downMs / 1000}`;
}

interface RunResult {
  readonly restarts: number;
  /** Worker exits the drill did not cause. */
  readonly unplannedExits: number;
  /** plant: the message keys (runs or trees) whose state was planted over. */
  readonly planted: readonly string[];
  /** plant: what the planted inputs write beside their own state, shared with other runs (a tenant's month). */
  readonly shared: readonly string[];
  /** oom: whether a worker reported itself not ready while Redis refused. */
  readonly unhealthySeen: boolean;
  /** broker-loss, rolling: what each restart took, one line each. */
  readonly recovery: readonly string[];
}

/** What a plant disruption needs of the inputs: the state key and the message key of the input about to be sent. */
export type PlantTarget = (index: number) => { readonly redisKey: string; readonly messageKey: string; readonly shared: readonly string[] } | null;

/**
 * Redis refuses every write (OOM) until the returned function puts its memory settings back:
 * maxmemory set to 1 byte under the noeviction policy.
 */
async function refuseWrites(redis: Services["redis"]): Promise<() => Promise<void>> {
  // Every master of a cluster, each keeping its own settings to restore.
  const restores = await Promise.all(
    masterNodes(redis).map(async (node) => {
      const [, maxmemory] = (await node.config("GET", "maxmemory")) as [string, string];
      const [, policy] = (await node.config("GET", "maxmemory-policy")) as [string, string];
      await node.config("SET", "maxmemory-policy", "noeviction");
      await node.config("SET", "maxmemory", "1");
      return async () => {
        await node.config("SET", "maxmemory", maxmemory);
        await node.config("SET", "maxmemory-policy", policy);
      };
    }),
  );
  return async () => {
    await Promise.all(restores.map((r) => r()));
  };
}

/** Feeds the lab while its worker runs, disrupting it `times` times; the worker still running is left in `workers`. */
async function run(s: Services, lab: Lab, messages: ReadonlyArray<{ key: string; value: Buffer }>, o: DisruptOptions, times: number, workers: Worker[], target: PlantTarget = () => null): Promise<RunResult> {
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
  const planted: string[] = [];
  const shared: string[] = [];
  let restore: (() => Promise<void>) | null = null;
  const recovery: string[] = [];
  /** broker-loss, rolling: the last broker disruption, done once its broker(s) are back in sync. */
  let brokerTurn: Promise<void> = Promise.resolve();
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
      } else if (d.kind === "plant") {
        const t = target(sent);
        if (t === null) throw new Error(`the ${lab.subject.name} drill keeps no Redis state per run or tree to plant a key over`);
        await s.redis.set(t.redisKey, "planted by the drill: not this key's type");
        planted.push(t.messageKey);
        shared.push(...t.shared);
        say(`  a string planted over ${t.redisKey} after ${sent} sent`);
      } else if (d.kind === "script-flush") {
        await Promise.all(masterNodes(s.redis).map((node) => node.script("FLUSH")));
        say(`  SCRIPT FLUSH after ${sent} sent`);
      } else if (d.kind === "oom") {
        say(`  Redis refuses writes (OOM) after ${sent} sent, for ${d.downMs / 1000} s`);
        restore = await refuseWrites(s.redis);
        disruptions.push(
          (async () => {
            await sleep(d.downMs);
            const r = restore;
            restore = null;
            await r?.();
            say("  Redis takes writes again");
          })(),
        );
      } else if (d.kind === "broker-loss") {
        // One broker down at a time: the previous one is back in sync first.
        await brokerTurn;
        const brokers = await clusterBrokers(s.admin);
        let victim: ClusterBroker | undefined;
        let why: string;
        if (d.target === "leader") {
          const most = await leaderOfMost(s.admin, lab.specs.map((t) => t.name));
          victim = brokers.find((b) => b.nodeId === most.nodeId);
          why = `leads ${most.partitions} of the lab's ${most.of} partitions`;
        } else {
          const txId = workerTransactionalId(lab);
          victim = await transactionCoordinator(brokers, txId);
          why = `coordinates the transactions of ${txId}`;
        }
        if (victim === undefined) throw new Error("the broker to kill is not among the brokers the cluster reports");
        const b = victim;
        const outBefore = worker.stats.out;
        const killedAt = Date.now();
        await stopBroker(b, true);
        say(`  broker ${b.nodeId} (${b.host}:${b.port}, ${why}) killed after ${sent} sent, for ${d.downMs / 1000} s`);
        const current = worker;
        brokerTurn = (async () => {
          // When the worker writes again: every output after the kill is one more than it had.
          const resumed = (async () => {
            while (current.stats.out <= outBefore && Date.now() - killedAt < 300_000) await sleep(100);
            return (Date.now() - killedAt) / 1000;
          })();
          await sleep(d.downMs);
          const t = Date.now();
          await startBrokers();
          const up = (Date.now() - t) / 1000;
          await untilInSync(s.admin, b.nodeId);
          const line = `broker ${b.nodeId} (${d.target}) killed: the worker wrote again ${(await resumed).toFixed(1)} s after the kill; restarted after ${d.downMs / 1000} s, its start took ${up.toFixed(0)} s, back in sync ${((Date.now() - t) / 1000).toFixed(0)} s after the start`;
          recovery.push(line);
          say(`  ${line}`);
        })();
        brokerTurn.catch(() => undefined);
        disruptions.push(brokerTurn);
        restarts++;
      } else if (d.kind === "rolling") {
        const previous = brokerTurn;
        say(`  rolling restart of the three brokers after ${sent} sent`);
        brokerTurn = (async () => {
          await previous;
          for (const b of await clusterBrokers(s.admin)) {
            const t = Date.now();
            await stopBroker(b, false);
            const stopped = (Date.now() - t) / 1000;
            await startBrokers();
            await untilInSync(s.admin, b.nodeId);
            const line = `broker ${b.nodeId} (${b.host}:${b.port}) restarted: stopped in ${stopped.toFixed(0)} s, back in the ISR of every partition ${((Date.now() - t) / 1000).toFixed(0)} s after the SIGTERM`;
            recovery.push(line);
            say(`  ${line}`);
          }
        })();
        brokerTurn.catch(() => undefined);
        disruptions.push(brokerTurn);
        restarts++;
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
    return { restarts, unplannedExits, planted, shared, unhealthySeen: workers.some((w) => w.unhealthySeen), recovery };
  } finally {
    // A drill that failed midway never leaves Redis refusing writes.
    const r = restore as (() => Promise<void>) | null;
    await r?.().catch(() => undefined);
    // A drill that failed midway never leaves a broker down.
    if (recovery.length < restarts) {
      await brokerTurn.catch(() => undefined);
      await startBrokers().catch((err: unknown) => say(`  starting the brokers again failed: ${err instanceof Error ? err.message : String(err)}`));
    }
    await producer.disconnect().catch(() => undefined);
  }
}

/** Whether a Redis key of the lab belongs to one of the planted runs or trees (its ID inside the key's hash tag or name). */
function ofPlanted(key: string, planted: readonly string[]): boolean {
  return planted.some((p) => new RegExp(`${p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![\\w-])`).test(key));
}

/** Records in a lab's input topic (written without transactions: one offset a record). */
async function inputsWritten(s: Services, lab: Lab): Promise<number> {
  const offsets = await s.admin.fetchTopicOffsets(lab.input);
  return offsets.reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
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
  if (BROKER_DISRUPTIONS.has(o.disruption.kind)) await requireStackCluster(s.admin);
  const subject = await drillSubject(o.subject);
  if (REDIS_DISRUPTIONS.has(o.disruption.kind) && subject.stateKey === undefined) {
    throw new Error(`${describe(o.disruption, o.times)} disrupts Redis state, which ${o.subject} keeps none of: drill ${REDIS_SUBJECTS.join(" or ")}`);
  }
  const events = subject.kind.make(o.events, `dr-${Date.now().toString(36)}`, 7);
  const messages = events.map((e) => ({ key: e.key, value: s.serde.encode(subject.kind.schema, e.value) }));
  const want = events.filter((e) => e.answered).map((e) => e.value.id);
  const started = Date.now();
  const reference = await openLab(s, subject);
  const drill = await openLab(s, subject);
  // On the cluster the labs' topics are replicated as the pipeline's are (three replicas, min.insync.replicas 2).
  const unreplicated = BROKER_DISRUPTIONS.has(o.disruption.kind) ? [...(await replicationProblems(s.admin, reference.specs.map((t) => t.name))), ...(await replicationProblems(s.admin, drill.specs.map((t) => t.name)))] : [];
  // The drill's outputs also as a runtime client takes them: before their commit (aborted ones too).
  const readers = [new OutputReader(s.kafka, s.serde, reference), new OutputReader(s.kafka, s.serde, drill), new OutputReader(s.kafka, s.serde, drill, { uncommitted: true })] as const;
  const referenceWorkers: Worker[] = [];
  const workers: Worker[] = [];
  let referenceStopped: Promise<number> = Promise.resolve(0);
  try {
    await Promise.all(readers.map((r) => r.start()));
    say(`${o.subject}: reference run (undisturbed), ${messages.length} inputs at ${o.rate}/s`);
    await run(s, reference, messages, { ...o, times: 0 }, 0, referenceWorkers);
    const refMissing = await readers[0].waitFor(want, o.drainMs ?? 90_000);
    // The reference's worker stops (seconds: its fetch in flight ends first) while the drill run
    // starts: the reference's answers are read by now, and its lab is its own. Awaited below.
    referenceStopped = stopAll(referenceWorkers);
    referenceStopped.catch(() => undefined);
    say(`${o.subject}: drill run, ${describe(o.disruption, o.times)}`);
    const target: PlantTarget = (index) => {
      const e = events[index];
      const redisKey = e ? subject.stateKey?.(drill.keys, e.value) : undefined;
      return e && redisKey ? { redisKey, messageKey: e.key, shared: subject.sharedState?.(e.value) ?? [] } : null;
    };
    const result = await run(s, drill, messages, o, o.times, workers, target);
    const lost = await readers[1].waitFor(want, o.drainMs ?? 90_000);
    await referenceStopped;
    if (lost > 0) for (const w of workers) say(`  a worker's last log lines:\n${w.log.split("\n").slice(-12).join("\n")}`);
    // Late duplicates would arrive after the answers: give them a moment to show.
    await sleep(1_500);
    // Ready again once every answer is out: no batch still failing past the retry bound.
    const healthyAtEnd = workers.every((w) => w.stats.failing === null);
    const peakRss = await stopAll(workers);
    const ref = answersById(readers[0].outputs);
    const got = answersById(readers[1].outputs);
    // plant: the inputs of the planted run or tree may be dead-lettered, with the server's WRONGTYPE; no other input may be.
    const plantedIds = new Set(events.filter((e) => result.planted.includes(e.key)).map((e) => e.value.id));
    const deadOf = (id: string): boolean => (got.get(id) ?? []).some((a) => a.startsWith('{"dead":true'));
    let differing = 0;
    let plantedDead = 0;
    let plantedWrong = 0;
    for (const id of want) {
      const same = JSON.stringify(ref.get(id) ?? []) === JSON.stringify(got.get(id) ?? []);
      if (!plantedIds.has(id)) {
        if (!same && differing++ < 2) say(`  ${id}: reference ${JSON.stringify(ref.get(id) ?? []).slice(0, 600)} / drill ${JSON.stringify(got.get(id) ?? []).slice(0, 600)}`);
      } else if (!same) {
        const answers = got.get(id) ?? [];
        if (answers.length > 0 && answers.every((a) => a.startsWith('{"dead":true') && a.includes("WRONGTYPE"))) plantedDead++;
        else plantedWrong++;
      }
    }
    const deadElsewhere = want.filter((id) => !plantedIds.has(id) && deadOf(id)).length;
    // The inputs as written: an input the feeding producer lost or wrote twice would show here.
    const written = await inputsWritten(s, drill);
    const refState = await dumpState(s.redis, reference);
    const drillState = await dumpState(s.redis, drill);
    // The planted run's or tree's own keys differ; so do the totals its inputs share with others
    // (a tenant's month lacks the spends of the asks dead-lettered), which are left out too.
    const allDiff = stateDifferences(refState, drillState);
    const stateDiff = allDiff.filter((k) => !ofPlanted(k, result.planted) && !result.shared.some((f) => k.includes(f)));
    if (allDiff.length > stateDiff.length) say(`  left out of the state comparison: ${allDiff.length - stateDiff.length} keys of the planted key's run or tree, or shared by its inputs (${allDiff.filter((k) => !stateDiff.includes(k)).join(", ")})`);
    for (const key of stateDiff.slice(0, 2)) say(`  ${key}: reference ${(refState.get(key) ?? "(none)").slice(0, 300)} / drill ${(drillState.get(key) ?? "(none)").slice(0, 300)}`);
    const checks: Record<string, boolean> = {
      "reference complete": refMissing === 0,
      "every input written once": written === messages.length,
      "no two outputs of one ID differ": conflicting(readers[1].outputs) === 0,
      "answers read before their commit are the committed ones": unmatchedEarly(readers[2].outputs, readers[1].outputs) === 0,
      "answers equal the reference": differing === 0,
      "Redis state equals the reference": stateDiff.length === 0,
    };
    if (o.disruption.kind === "kill9") checks[`restarted ${o.times} times`] = result.restarts === o.times;
    else if (o.disruption.kind === "rebalance") checks[`${o.times} rebalances`] = result.restarts === o.times && result.unplannedExits === 0;
    else if (o.disruption.kind === "reshard") checks[`${o.times} slot migrations, the processor alive`] = result.restarts === o.times && result.unplannedExits === 0;
    else checks["the processor lived through it"] = result.unplannedExits === 0;
    if (o.disruption.kind === "plant") {
      checks["the planted key's inputs answered as the reference or dead-lettered with WRONGTYPE"] = plantedWrong === 0 && plantedDead > 0;
      checks["no other input dead-lettered"] = deadElsewhere === 0;
    }
    if (o.disruption.kind === "oom") checks["not ready while Redis refused, ready again after"] = result.unhealthySeen && healthyAtEnd;
    if (BROKER_DISRUPTIONS.has(o.disruption.kind)) {
      checks[`${o.times} broker disruptions, each broker back in sync`] = result.restarts === o.times && result.recovery.length >= o.times;
      checks["the labs' topics have three replicas and min.insync.replicas 2"] = unreplicated.length === 0;
      // A commit whose answer was lost with its broker is settled by the group's offsets, so no
      // batch is committed twice: a read-committed consumer reads each output once.
      checks["no output committed twice"] = duplicates(readers[1].outputs) === 0;
      const doubt = workers.reduce((a, w) => ({ landed: a.landed + w.inDoubt.landed, notLanded: a.notLanded + w.inDoubt.notLanded, unknown: a.unknown + w.inDoubt.unknown }), { landed: 0, notLanded: 0, unknown: 0 });
      say(`  commits in doubt (sent, not answered): ${doubt.landed} had landed (their batches not handled again), ${doubt.notLanded} had not, ${doubt.unknown} left unknown`);
    }
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
        ...(written !== messages.length ? [`the drill's input topic holds ${written} records for ${messages.length} inputs sent`] : []),
        ...(differing > 0 ? [`${differing} inputs answered differently from the reference`] : []),
        ...(unmatchedEarly(readers[2].outputs, readers[1].outputs) > 0 ? [`${unmatchedEarly(readers[2].outputs, readers[1].outputs)} outputs read before their commit were not committed as read`] : []),
        ...(stateDiff.length > 0 ? [`${stateDiff.length} Redis keys differ, such as ${stateDiff.slice(0, 3).join(", ")}`] : []),
        ...(result.unplannedExits > 0 ? [`the processor exited ${result.unplannedExits} times on its own`] : []),
        ...(plantedWrong > 0 ? [`${plantedWrong} inputs of the planted key were neither answered as the reference nor dead-lettered with WRONGTYPE`] : []),
        ...(deadElsewhere > 0 ? [`${deadElsewhere} inputs of keys nobody planted over were dead-lettered`] : []),
        ...(o.disruption.kind === "plant" && plantedDead === 0 ? ["no input of the planted key was dead-lettered: the plant came after its last input"] : []),
        ...(o.disruption.kind === "oom" && !result.unhealthySeen ? ["no worker reported itself not ready while Redis refused writes"] : []),
        ...(o.disruption.kind === "oom" && !healthyAtEnd ? ["the worker still reported itself not ready at the end"] : []),
        ...(BROKER_DISRUPTIONS.has(o.disruption.kind) && duplicates(readers[1].outputs) > 0 ? [`${duplicates(readers[1].outputs)} outputs committed twice`] : []),
        ...(unreplicated.length > 0 ? [`lab topics not replicated as the cluster's: ${unreplicated.slice(0, 3).join("; ")}`] : []),
      ],
      ...(result.recovery.length > 0 ? { notes: result.recovery } : {}),
      seconds: (Date.now() - started) / 1000,
      command: command(o),
    };
  } finally {
    await referenceStopped.catch(() => undefined);
    await stopAll(referenceWorkers);
    await stopAll(workers);
    await Promise.all(readers.map((r) => r.stop().catch(() => undefined)));
    await reference.close();
    await drill.close();
  }
}
