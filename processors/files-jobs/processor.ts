/**
 * The file rules on job lifecycle events (FILE-3, FILE-4, FILE-5, OFF-13), on `oz0.jobs`:
 *
 * - every start keeps the job's offload threshold as it resolves now (OFF-13), so a settings
 *   change later never moves a running job's;
 * - a root start records the tree (its job, running) and, for a conversation's turn, the turn
 *   it follows, which is where later turns read earlier turns' files from (FILE-3); a root end
 *   marks the tree's job ended;
 * - a start under a chosen tree ID is refused while that tree still holds files and its job
 *   has ended, and when the ID is a conversation's turn; while the job runs, it follows it and
 *   is handed no files (FILE-5). "That tree" is the tenant's own: records are kept per tenant
 *   and tree, so a start naming another tenant's tree ID neither sees nor changes its record;

 * - a start naming files another job stored needs a person or app with the content
 *   permission, else it is refused; the files the tenant still holds are granted to the new
 *   tree and the handing is audited as `job.files_handed`; the others are left out, and the
 *   tool reading them later gets "not found" (FILE-4).
 *
 * Refusals are Decisions on `oz0.admissions`, as the limits processors' are.
 */
import type { AgentDefinition } from "../../config/agent.ts";
import { resolveOffloadThreshold } from "../../config/resolve.ts";
import type { TenantSettings } from "../../config/tenant.ts";
import type { AuditEvent, Decision, JobEvent } from "../../schemas/types.ts";
import { FileNotFound } from "../../store/file-errors.ts";
import type { ConfigView } from "../runner/config-table.ts";
import { deriveId } from "../runner/ids.ts";
import { defineProcessor, type Emit, type InputRecord, type Outcome } from "../runner/processor.ts";
import type { FilesStore } from "../files/store.ts";
import { chosenTreeRule, handingRule, type StartRule } from "./rules.ts";
import { endingsOf } from "../limits/standing.ts";
import type { StandingStore } from "../limits/store.ts";

export const FILES_JOBS = "files-jobs";
export const FILES_HANDED = "job.files_handed";

export interface FilesJobsEnv {
  readonly state: FilesStore;
  readonly config: ConfigView;
  readonly files: {
    /** Whether the tree holds a file not past retention (`FileStore.holdsFiles`). */
    holdsFiles(tenant: string, tree: string): Promise<boolean>;
    /** Grants a file of the tenant to the tree; FileNotFound when the tenant holds no such file (`FileStore.hand`). */
    hand(tenant: string, ref: string, tree: string): Promise<unknown>;
  };
  /** Endings bind: a start the file rules refuse ends the job, so its later inputs are refused too (processors/limits/standing.ts). */
  readonly standing?: StandingStore;
}

function decision(e: JobEvent, tag: string, rule: Exclude<StartRule, { action: "start" }>): Emit {
  const value: Decision = {
    id: deriveId(FILES_JOBS, tag, e.id),
    input_id: e.id,
    processor: FILES_JOBS,
    tenant: e.tenant,
    tree_id: e.tree_id,
    job_id: e.job_id,
    run_id: e.run_id,
    subject: e.job_id,
    ...(rule.action === "refuse"
      ? { verdict: "refuse", reason_code: rule.code, limit: rule.code === "content_permission" ? "permissions.content" : "tree_id", message: rule.message }
      : {
          verdict: "allow",
          reason_code: "follows_running_job",
          limit: "tree_id",
          message: `The start follows the running job of tree ${e.tree_id}; it is handed no files${e.files.length > 0 ? ` (the ${e.files.length} it names are left out)` : ""}.`,
        }),
    numbers: { files: e.files.length },
    evidence: null,
    ts: e.ts,
  };
  return { to: "oz0.admissions", key: e.tree_id, value };
}

function audit(e: JobEvent, handed: readonly string[], leftOut: number): Emit {
  const value: AuditEvent = {
    id: deriveId(FILES_JOBS, "audit", e.id),
    kind: FILES_HANDED,
    tenant: e.tenant,
    tree_id: e.tree_id,
    job_id: e.job_id,
    actor: e.principal,
    reason: null,
    facts: { refs: handed.join(","), started_by: e.started_by, agent: e.agent },
    numbers: { handed: handed.length, left_out: leftOut },
    ts: e.ts,
  };
  return { to: "oz0.audit", key: e.tenant, value };
}

/** Grants the files the tenant still holds to the new tree; the others are left out. */
async function handFiles(e: JobEvent, env: FilesJobsEnv): Promise<Emit[]> {
  if (e.files.length === 0) return [];
  const handed: string[] = [];
  const asked = [...new Set(e.files)];
  for (const ref of asked) {
    // A value that is not a ref names no file: left out like one the tenant does not hold.
    if (!/^oz0-file:sha256:[0-9a-f]{64}$/.test(ref)) continue;
    try {
      await env.files.hand(e.tenant, ref, e.tree_id);
      handed.push(ref);
    } catch (err) {
      if (!(err instanceof FileNotFound)) throw err;
    }
  }
  return [audit(e, handed, asked.length - handed.length)];
}

async function rootStart(r: InputRecord<JobEvent>, env: FilesJobsEnv): Promise<Emit[]> {
  const e = r.value;
  if (e.chosen_tree_id) {
    const rule = await chosenTreeRule(e, await env.state.tree(e.tenant, e.tree_id), () => env.files.holdsFiles(e.tenant, e.tree_id));
    if (rule.action !== "start") return [decision(e, rule.action, rule)];
  }
  const handing = handingRule(e);
  if (handing.action !== "start") return [decision(e, "refuse", handing)];
  await env.state.start(e.tenant, e.tree_id, { event: e.id, job: e.job_id, conversation: e.conversation_id }, { source: `${r.topic}:${r.partition}`, offset: r.offset });
  if (e.conversation_id) await env.state.turn(e.tenant, e.conversation_id, e.tree_id, e.previous_turn);
  return handFiles(e, env);
}

/** A child's start may name files as well (FILE-4): the same permission, the same handing. */
async function childStart(e: JobEvent, env: FilesJobsEnv): Promise<Emit[]> {
  const handing = handingRule(e);
  if (handing.action !== "start") return [decision(e, "refuse", handing)];
  return handFiles(e, env);
}

export const filesJobsProcessor = defineProcessor<JobEvent, FilesJobsEnv>({
  name: FILES_JOBS,
  input: "oz0.jobs",
  outputs: ["oz0.admissions", "oz0.audit"],
  validate(e) {
    const reasons: string[] = [];
    for (const field of ["id", "tenant", "tree_id", "job_id", "agent"] as const) {
      if (!e[field]) reasons.push(`${field} is empty`);
    }
    if (e.previous_turn !== null && !e.conversation_id) reasons.push("previous_turn names the turn a conversation's turn follows: give the conversation_id as well");
    if (e.previous_turn !== null && e.previous_turn === e.tree_id) reasons.push(`previous_turn is the turn's own tree ${e.tree_id}: a turn follows an earlier turn`);
    return reasons;
  },
  async process(records, env) {
    const out: Outcome[] = [];
    for (const r of records) {
      const e = r.value;
      if (e.kind === "started") {
        // OFF-13: kept at the start, so every result of the job is weighed against it.
        const agent = env.config.get("agent", e.agent) as AgentDefinition | undefined;
        const tenant = env.config.get("tenant", e.tenant) as TenantSettings | undefined;
        await env.state.threshold(e.tenant, e.tree_id, e.job_id, resolveOffloadThreshold(agent, tenant));
        const emits = e.parent_job_id === null ? await rootStart(r, env) : await childStart(e, env);
        await env.standing?.record(endingsOf(emits, false));
        out.push({ emits });
      } else if (e.kind === "ended" && e.parent_job_id === null) {
        await env.state.end(e.tenant, e.tree_id, e.job_id, { source: `${r.topic}:${r.partition}`, offset: r.offset });
        out.push({ emits: [] });
      } else {
        out.push({ emits: [] });
      }
    }
    return out;
  },
});
