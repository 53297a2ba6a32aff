/**
 * OFF-7 and OFF-9 from the agent definitions, pure: whether a job's requests offer
 * oz.read_result, and which labels an agent's clearance withholds. Runtimes call the same
 * functions (`client/read-result.ts`) to decide what to offer the model.
 *
 * The job's agents: the agent that makes the request, and every agent it may delegate to
 * (`delegation.allow`, followed on through theirs). Files are kept per tree, and a delegated
 * job is in its parent's tree, so a ref a delegated agent's result was offloaded under is one
 * its parent may read back. An agent no definition names lists no tools.
 */
import type { AgentDefinition } from "../../config/agent.ts";
import { isBuiltinTool } from "./tool.ts";

/** Finds an agent's definition by name (the config table's `agent` rows). */
export type AgentLookup = (name: string) => AgentDefinition | undefined;

/** The definitions of the job's agents, the requesting agent's first; each once, unknown names left out. */
export function jobAgents(agent: string, lookup: AgentLookup): AgentDefinition[] {
  const seen = new Set<string>();
  const out: AgentDefinition[] = [];
  const queue = [agent];
  for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
    if (seen.has(name)) continue;
    seen.add(name);
    const def = lookup(name);
    if (def === undefined) continue;
    out.push(def);
    queue.push(...(def.delegation?.allow ?? []));
  }
  return out;
}

/** Whether an agent lists a tool of a plugin (any tool but the platform's own, `oz` and `oz.*`). */
export function listsPluginTool(agent: AgentDefinition): boolean {
  return (agent.tools ?? []).some((t) => !isBuiltinTool(t));
}

/**
 * OFF-7: oz.read_result is offered in every request of a job where some agent lists a plugin
 * tool, and not otherwise (a job without plugin tools has no result to offload).
 */
export function offersReadResult(agent: string, lookup: AgentLookup): boolean {
  return jobAgents(agent, lookup).some(listsPluginTool);
}

/** OFF-9: how many of a file's labels are above an agent's clearance, in words (read back or handed alike). */
export function aboveClearanceWords(count: number, agent: string): string {
  return `${count === 1 ? "one of its labels is" : `${count} of its labels are`} above the clearance of agent ${agent}`;
}

/**
 * OFF-9: the labels of a stored result above the agent's clearance: those its `clearance` does
 * not list. An agent without a clearance may read every label.
 */
export function labelsAboveClearance(labels: readonly string[], agent: AgentDefinition | undefined): string[] {
  const clearance = agent?.clearance;
  if (clearance === undefined) return [];
  return labels.filter((l) => !clearance.includes(l));
}
