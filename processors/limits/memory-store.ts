/** The limits state in memory, over the pure logic of admission.ts: for unit tests. */
import { admitCall, askChild, endJob, newTreeState, rewarm, settleCall, startChild, startRoot, waitEvent, type TreeState } from "./admission.ts";
import type { LimitsStore } from "./store.ts";

export function memoryLimitsStore(): LimitsStore & { trees: Map<string, TreeState> } {
  const trees = new Map<string, TreeState>();
  const authoritative = new Map<string, boolean>();
  const tree = (id: string): TreeState => {
    const t = trees.get(id);
    if (!t) throw new Error(`tree ${id} has no settings: init it first`);
    return t;
  };
  return {
    trees,
    read: (treeId, jobId) => Promise.resolve({ settings: trees.get(treeId)?.settings ?? null, jobAgent: trees.get(treeId)?.jobs.get(jobId)?.agent ?? "" }),
    init: (treeId, settings, auth, root) => {
      const t = trees.get(treeId);
      if (!t) {
        trees.set(treeId, newTreeState(settings));
        authoritative.set(treeId, auth);
      } else if (auth && authoritative.get(treeId) === false) {
        t.settings = settings;
        authoritative.set(treeId, true);
      }
      const now = tree(treeId);
      if (root) startRoot(now, root.jobId, root.agent, root.runId);
      return Promise.resolve(now.settings);
    },
    admitCall: (treeId, ask) => Promise.resolve(admitCall(tree(treeId), ask)),
    settleCall: (treeId, usage) => Promise.resolve(settleCall(tree(treeId), usage)),
    rewarm: (treeId, requestId, cost) => Promise.resolve(rewarm(tree(treeId), requestId, cost)),
    child: (treeId, phase, ask) => Promise.resolve(phase === "ask" ? askChild(tree(treeId), ask) : startChild(tree(treeId), ask)),
    endJob: (treeId, jobId) => {
      endJob(tree(treeId), jobId);
      return Promise.resolve();
    },
    wait: (treeId, eventId, jobId, kind, ts) => Promise.resolve(waitEvent(tree(treeId), eventId, jobId, kind, ts)),
    spent: (treeId) => Promise.resolve(trees.get(treeId)?.spent ?? null),
  };
}
