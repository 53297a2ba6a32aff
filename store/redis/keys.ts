/**
 * Every Redis key of the pipeline is built here. Keys of one run (or one tree) share a hash
 * tag, `{run:<tenant>/<id>}`, so a script that touches several of them runs unchanged on Redis
 * Cluster. A key built from a tree, job, run or conversation ID names its tenant too: those IDs
 * come from runtimes and two tenants may use the same one (docs/security.md).
 */
export class Keys {
  readonly prefix: string;

  constructor(prefix = "oz0") {
    if (!/^[A-Za-z0-9_.-]+$/.test(prefix)) throw new Error(`Redis key prefix ${JSON.stringify(prefix)} may hold only letters, digits, '_', '.' and '-'`);
    this.prefix = prefix;
  }

  private tagged(kind: "run" | "tree" | "tenant" | "agent" | "conv" | "trace", id: string): string {
    if (id.length === 0) throw new Error(`an empty ${kind} ID cannot name Redis state`);
    // Braces inside the ID would change the hash tag; they are escaped away.
    return `${this.prefix}:{${kind}:${id.replace(/[{}]/g, "_")}}`;
  }

  /**
   * A tree's hash tag within its tenant, `{tree:<tenant>/<tree>}`: tree and job IDs come from
   * runtimes and may be chosen (FILE-5), so two tenants may use the same one; their state must
   * never meet. The tenant is URI-encoded so that no tenant and tree pair reads as another.
   */
  private tenantTree(tenant: string, treeId: string): string {
    if (tenant.length === 0) throw new Error("an empty tenant cannot name a tree's Redis state");
    if (treeId.length === 0) throw new Error("an empty tree ID cannot name Redis state");
    return this.tagged("tree", `${encodeURIComponent(tenant)}/${treeId}`);
  }

  /** Counts of events per run, with the input offsets already applied (idempotence). */
  tally(runId: string): string {
    return `${this.tagged("run", runId)}:tally`;
  }

  /**
   * A tenant's tree's budget and limits (LIM-1..LIM-9): its settings, counters, reservations,
   * jobs and the answers already given, in one hash, so each admission is one script on one key.
   */
  limits(tenant: string, treeId: string): string {
    return `${this.tenantTree(tenant, treeId)}:limits`;
  }

  /** LIM-10: a tenant's spend in one calendar month (UTC, `YYYY-MM`): spent, held worst cases and the answers given. */
  tenantMonth(tenant: string, month: string): string {
    return `${this.tagged("tenant", tenant)}:spend:${monthPart(month)}`;
  }

  /** LIM-10: when the tenant month's held worst cases are dropped and its answers forgotten (a sorted set by time; same slot). */
  tenantMonthTimers(tenant: string, month: string): string {
    return `${this.tagged("tenant", tenant)}:spend:${monthPart(month)}:timers`;
  }

  /**
   * LIM-10: one principal's or one team's spend in a calendar month (UTC, `YYYY-MM`), in the
   * tenant's slot, so one script checks a principal's and a team's quota together.
   */
  quotaMonth(tenant: string, kind: "person" | "team", id: string, month: string): string {
    if (id.length === 0) throw new Error(`an empty ${kind} cannot name a quota's Redis state`);
    return `${this.tagged("tenant", tenant)}:quota:${kind}:${encodeURIComponent(id)}:${monthPart(month)}`;
  }

  /** LIM-10: when a quota month's held worst cases are dropped and its answers forgotten (a sorted set by time; same slot). */
  quotaMonthTimers(tenant: string, kind: "person" | "team", id: string, month: string): string {
    return `${this.quotaMonth(tenant, kind, id, month)}:timers`;
  }

  /** LIM-8: the finished trees of a tenant's agent, as the spend forecast reads them. */
  forecast(tenant: string, agent: string): string {
    return `${this.tagged("agent", `${tenant}/${agent}`)}:forecast`;
  }

  /**
   * LOOP-1..LOOP-8: one lane of a tenant's run's loop state (its calls, its results, or the
   * answers to its loop approvals), with the input offsets applied and the outcomes of loops.
   * Run IDs come from runtimes, so the run's hash tag names its tenant, `{run:<tenant>/<run>}`.
   */
  loopLane(tenant: string, runId: string, lane: "calls" | "results" | "approvals"): string {
    return `${this.tenantRun(tenant, runId)}:loop:${lane}`;
  }

  /** LOOP-5, LOOP-7: what every lane of a tenant's run's loop state reads: approvals, stop, finish-only. */
  loopFlags(tenant: string, runId: string): string {
    return `${this.tenantRun(tenant, runId)}:loop:flags`;
  }

  private tenantRun(tenant: string, runId: string): string {
    if (tenant.length === 0) throw new Error("an empty tenant cannot name a run's Redis state");
    if (runId.length === 0) throw new Error("an empty run ID cannot name Redis state");
    return this.tagged("run", `${encodeURIComponent(tenant)}/${runId}`);
  }

  /** OFF-9: the labels a job of a tenant's tree has joined by reading stored results back (a set, in its tree's slot). */
  jobLabels(tenant: string, treeId: string, jobId: string): string {
    if (jobId.length === 0) throw new Error("an empty job ID cannot name Redis state");
    return `${this.tenantTree(tenant, treeId)}:job:${jobId}:labels`;
  }

  /** LOOP-5: deadlines of loops waiting for a person, of every run (a sorted set by time). */
  loopDeadlines(): string {
    return `${this.prefix}:{loops}:deadlines`;
  }

  /** LOOP-5: the tenant and run a loop's approval belongs to (a string, `<tenant>\n<run>`), so an answer finds its run. */
  loopApproval(approval: string): string {
    return `${this.prefix}:{loops}:approval:${approval.replace(/[{}]/g, "_")}`;
  }

  /** LIM-7, LIM-8, LIM-10: budget requests waiting for a person, of every tree (a sorted set by time of `<tenant>\n<tree>\n<approval>`). */
  budgetRequests(): string {
    return `${this.prefix}:{budgets}:waiting`;
  }

  /** The tenant and tree a budget request belongs to (a string, `<tenant>\n<tree>`), so an answer finds it after it left the waiting index. */
  budgetRequest(approval: string): string {
    return `${this.prefix}:{budgets}:approval:${approval.replace(/[{}]/g, "_")}`;
  }

  /**
   * LIM-11: a job's unknown outcome waiting for a person (an approval of kind unknown, `u-...`):
   * a hash with the request and, once answered, its answer. In the `{outcomes}` slot with the
   * index of those waiting, so an answer and its leaving the index are one script.
   */
  unknownOutcome(approval: string): string {
    return `${this.prefix}:{outcomes}:approval:${approval.replace(/[{}]/g, "_")}`;
  }

  /** LIM-11: the unknown outcomes waiting for a person, of every tenant (a sorted set by deadline of approval IDs). */
  unknownOutcomes(): string {
    return `${this.prefix}:{outcomes}:waiting`;
  }

  /** LOOP-9: loops acted on in one UTC day (`YYYY-MM-DD`): counts per tenant, plugin and tool, and the loops already counted. */
  loopStats(day: string, part: "counts" | "counted"): string {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new Error(`loop stats are kept per UTC day as YYYY-MM-DD; got ${JSON.stringify(day)}`);
    return `${this.prefix}:{loopstats}:${day}:${part}`;
  }

  /** FILE-3, FILE-5: a tenant's tree's start as the file rules read it: its job, whether it runs, its conversation. */
  filesTree(tenant: string, treeId: string): string {
    return `${this.tenantTree(tenant, treeId)}:files`;
  }

  /** FILE-3: a tenant's conversation, each turn's tree with the tree of the turn it follows. */
  conversation(tenant: string, conversationId: string): string {
    return `${this.tagged("conv", `${encodeURIComponent(tenant)}/${conversationId}`)}:turns`;
  }

  /**
   * The project's API keys (client/gateway/keys.ts): one key's record by its ID (a hash: the
   * key's SHA-256, its binding, its revocation; never the key). Every key's record and the
   * indexes share the `{keys}` slot, so a key's making and its indexes are one script.
   */
  apiKey(id: string): string {
    if (id.length === 0) throw new Error("an empty key ID cannot name Redis state");
    return `${this.prefix}:{keys}:key:${id.replace(/[{}]/g, "_")}`;
  }

  /** The API keys of every tenant (a sorted set of key IDs by when each record goes; `{keys}` slot). */
  apiKeys(): string {
    return `${this.prefix}:{keys}:all`;
  }

  /** A tenant's API keys (a sorted set of key IDs by when each record goes; `{keys}` slot). */
  apiKeysOfTenant(tenant: string): string {
    if (tenant.length === 0) throw new Error("an empty tenant cannot name its keys' Redis state");
    return `${this.prefix}:{keys}:tenant:${encodeURIComponent(tenant)}`;
  }

  /** The API keys of a tenant's job (a sorted set of key IDs by when each record goes; `{keys}` slot), which its end revokes. */
  apiKeysOfJob(tenant: string, jobId: string): string {
    if (tenant.length === 0) throw new Error("an empty tenant cannot name its keys' Redis state");
    if (jobId.length === 0) throw new Error("an empty job ID cannot name Redis state");
    return `${this.prefix}:{keys}:job:${encodeURIComponent(tenant)}/${encodeURIComponent(jobId)}`;
  }

  /**
   * OFF-10, FILE-6: a tenant's tree's legal hold (a hash: reason, by, at, and what `oz0 hold
   * set` held), in the tree's slot, so erasing the tree's state and checking its hold are one
   * script. Kept until the hold is cleared: no TTL.
   */
  treeHold(tenant: string, treeId: string): string {
    return `${this.tenantTree(tenant, treeId)}:hold`;
  }

  /**
   * OFF-10, FILE-6: a tenant's tree being erased (`oz0 job erase`; a string: who, a newline,
   * since when), in the tree's slot beside its hold, so setting a hold and starting an erasure
   * exclude each other in one script. Removed when the erasure ends; its TTL
   * (TREE_ERASING_TTL_MS) ends it after a crash.
   */
  treeErasing(tenant: string, treeId: string): string {
    return `${this.tenantTree(tenant, treeId)}:erasing`;
  }

  /** The held trees of every tenant (a sorted set, all scores 0, of `<tenant>\n<tree>`, so one tenant's are a range by lex). */
  treeHolds(): string {
    return `${this.prefix}:{holds}:trees`;
  }

  /** A SCAN pattern matching every key of a tenant's tree's hash tag (glob characters of the IDs escaped). */
  treeKeysPattern(tenant: string, treeId: string): string {
    return `${this.tenantTree(tenant, treeId).replace(/[*?[\]\\]/g, "\\$&")}:*`;
  }

  /** The loop state of a tenant's run: every lane and its flags, as `loopLane` and `loopFlags` name them. */
  loopKeys(tenant: string, runId: string): string[] {
    return [this.loopLane(tenant, runId, "calls"), this.loopLane(tenant, runId, "results"), this.loopLane(tenant, runId, "approvals"), this.loopFlags(tenant, runId)];
  }

  /**
   * FILE-6, OFF-10: the retention sweep's lock on one tenant (a string, `<instance>\n<token>`,
   * with an expiry), so at most one instance sweeps a tenant at a time. `{retention}` slot.
   */
  retentionLock(tenant: string): string {
    if (tenant.length === 0) throw new Error("an empty tenant cannot name its retention lock");
    return `${this.prefix}:{retention}:lock:${encodeURIComponent(tenant)}`;
  }

  /** FILE-6, OFF-10: each tenant's last retention sweep (a hash, tenant to the sweep's record as JSON). `{retention}` slot. */
  retentionLast(): string {
    return `${this.prefix}:{retention}:last`;
  }

  /**
   * SYS-5: the trace index of a tenant's job: the names of the trace objects of format 3 that
   * hold its records (a set, store/trace-store.ts), in a slot of its own, `{trace:<tenant>/<job>}`,
   * both IDs URI-encoded so that no pair reads as another. Expires a day past the trace retention.
   */
  traceJob(tenant: string, jobId: string): string {
    if (tenant.length === 0) throw new Error("an empty tenant cannot name a trace index");
    if (jobId.length === 0) throw new Error("an empty job ID cannot name a trace index");
    return `${this.tagged("trace", `${encodeURIComponent(tenant)}/${encodeURIComponent(jobId)}`)}:objects`;
  }

  /** A SCAN pattern matching the trace index of every job of a tenant (`traceJob`). */
  traceJobsPattern(tenant: string): string {
    if (tenant.length === 0) throw new Error("an empty tenant cannot name a trace index");
    return `${this.prefix}:{trace:${encodeURIComponent(tenant).replace(/[*?[\]\\]/g, "\\$&")}/*}:objects`;
  }

  /** OFF-13: the offload threshold a job of a tenant's tree started with. */
  jobOffload(tenant: string, treeId: string, jobId: string): string {
    if (jobId.length === 0) throw new Error("an empty job ID cannot name Redis state");
    return `${this.tenantTree(tenant, treeId)}:offload:${jobId.replace(/[{}]/g, "_")}`;
  }
}

function monthPart(month: string): string {
  if (!/^\d{4}-\d{2}$/.test(month)) throw new Error(`a tenant's spend is kept per UTC month as YYYY-MM; got ${JSON.stringify(month)}`);
  return month;
}
