/**
 * The reads a decision makes before it can step (the jobs' standings, the runs' loop state, the
 * tree's state) go to the store together, so they cost one round trip, not one after another.
 * Each store's reads here wait at a gate: the test looks at which reads were asked before the
 * gate opens. A read asked only once another answered would be missing.
 */
import { describe, expect, it } from "vitest";
import { jobEvent, modelCall, setup as limitsSetup, agent } from "./support.ts";
import { memoryStandingStore } from "../../../processors/limits/memory-store.ts";
import { loopCallsProcessor, type LoopEnv } from "../../../processors/loops/calls-processor.ts";
import { MemoryLoopStore } from "../../../processors/loops/memory-store.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { StandingStore } from "../../../processors/limits/store.ts";
import { toolCall, uid } from "../../support/events.ts";

/** A gate every wrapped read waits at, and the reads asked so far, by store. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  const asked: string[] = [];
  return {
    asked,
    open,
    /** Makes `target[method]` note `name` when asked, then wait for the gate before it reads. */
    wrap<T extends object, K extends keyof T>(target: T, method: K, name: string): void {
      const inner = (target[method] as (...a: unknown[]) => Promise<unknown>).bind(target);
      (target as Record<K, unknown>)[method] = async (...args: unknown[]) => {
        asked.push(name);
        await opened;
        return inner(...args);
      };
    },
  };
}

/** Lets every read that can be asked now be asked (several turns of the event loop), then opens the gate. */
async function askedBeforeAnswers(g: ReturnType<typeof gate>, work: Promise<unknown>): Promise<string[]> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  const before = [...g.asked];
  g.open();
  await work;
  return before;
}

describe("reads made together", () => {
  it("LOOP-1 LIM-1 loop-calls reads the call's job standing and its run's loop state at once", async () => {
    const g = gate();
    const standing: StandingStore = memoryStandingStore();
    const store = new MemoryLoopStore();
    g.wrap(standing, "read", "standing");
    g.wrap(store, "read", "loop state");
    const env: LoopEnv = { config: staticConfig([]), store, standing };
    const driver = new TestDriver(loopCallsProcessor, env);
    const run = uid("run");
    const before = await askedBeforeAnswers(g, driver.pipe(toolCall({ run_id: run }), { key: run }));
    expect(before.sort()).toEqual(["loop state", "standing"]);
    expect(driver.deadLetters).toEqual([]);
  });

  it("LIM-1 LIM-2 a model call's job standing and its tree's state are read at once", async () => {
    const { env, calls } = limitsSetup([agent("boss")]);
    const g = gate();
    const standing: StandingStore = memoryStandingStore();
    g.wrap(standing, "read", "standing");
    g.wrap(env.store, "read", "tree");
    const driver = new TestDriver(calls.processor, { ...env, standing });
    const tree = uid("tree");
    const before = await askedBeforeAnswers(g, driver.pipe([modelCall(tree), modelCall(tree, { job_id: uid("job") })], { key: tree }));
    // The tree is read once for each of the batch's jobs, all with the standings.
    expect(before.sort()).toEqual(["standing", "tree", "tree"]);
    expect(driver.deadLetters).toEqual([]);
  });

  it("LIM-3 a child's ask reads the jobs' standings and its parent's tree at once", async () => {
    const { env, jobs } = limitsSetup([agent("boss", { delegation: { allow: ["helper"] } }), agent("helper")]);
    const standing: StandingStore = memoryStandingStore();
    const driver = new TestDriver(jobs.processor, { ...env, standing });
    const tree = uid("tree");
    await driver.pipe(jobEvent(tree), { key: tree });
    const g = gate();
    g.wrap(standing, "read", "standing");
    g.wrap(env.store, "read", "tree");
    const ask = jobEvent(tree, { job_id: uid("child"), parent_job_id: tree, kind: "child_ask", agent: "helper", delegation: "delegation", depth: 1 });
    const before = await askedBeforeAnswers(g, driver.pipe(ask, { key: tree }));
    expect(before.sort()).toEqual(["standing", "tree"]);
    expect(driver.deadLetters).toEqual([]);
  });
});
