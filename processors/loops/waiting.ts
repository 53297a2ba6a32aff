/**
 * LOOP-5 for the people who answer: what waits for a person, read from the state the loop
 * processors keep (the sorted set of deadlines and each run's flags), and a person's answer as
 * the `Decision` `loop-approvals` takes from `oz0.loop-approvals`. Pure: the command
 * (`bin/oz0.ts`) reads Redis and publishes.
 */
import type { Decision } from "../../schemas/types.ts";
import { deriveId } from "../runner/ids.ts";
import type { Deadline, RunFlags, TimerEntry } from "./store.ts";

/** A loop, or a call of a function that requires approval (TOOL-3), waiting for a person, as `oz0 approval list` shows it. */
export interface WaitingApproval {
  readonly approval: string;
  readonly kind: "loop" | "tool";
  readonly tenant: string;
  readonly tree_id: string;
  readonly job_id: string;
  readonly run_id: string;
  readonly call_id: string;
  /** The held call: plugin, tool and function, where the loop processors kept them. */
  readonly call: { readonly plugin: string; readonly tool: string; readonly function: string } | null;
  /** When the loop was found (the held call's time), epoch ms; null for holds kept before it was. */
  readonly asked_at: number | null;
  /** When nobody deciding stops the job, epoch ms. */
  readonly deadline: number;
  /** Steps of the tenant's escalation ladder already taken, and the one it is on (0: none yet). */
  readonly step: number;
  /** Who the approval goes to now: the last step taken's, or null before any. */
  readonly escalated_to: string | null;
  /** Steps still to come. */
  readonly next: ReadonlyArray<{ readonly at: number; readonly to: string }>;
  /** What the loop was: detector, calls, the repeated call's arguments, count and threshold. */
  readonly evidence: Deadline["evidence"] | null;
  /** TOOL-3: the held call's arguments as asked (an approval without --arguments makes the call with them); absent for a loop. */
  readonly arguments?: unknown;
}

/** What a run's flags say about one approval ("closed": with its job's end, closing.ts). */
export type ApprovalState = "waiting" | "approved" | "denied" | "closed" | "unknown";

export function approvalState(flags: RunFlags, approval: string): ApprovalState {
  if (flags.approved.has(approval)) return "approved";
  if (flags.closed?.has(approval)) return "closed";
  if (flags.denied.has(approval)) return "denied";
  return flags.holds.has(approval) ? "waiting" : "unknown";
}

/** The deadlines' members of waiting loops (the escalation steps are read from the hold). */
export function deadlineEntries(entries: readonly TimerEntry[]): TimerEntry[] {
  return entries.filter((e) => e.step === undefined);
}

/**
 * The waiting loop of a deadline, from its run's flags; null when the run no longer waits on
 * it (answered, or its state expired) though the timer has not dropped it yet.
 */
export function waitingOf(entry: TimerEntry, flags: RunFlags): WaitingApproval | null {
  const hold = flags.holds.get(entry.approval);
  if (!hold || approvalState(flags, entry.approval) !== "waiting") return null;
  const ladder = hold.escalation ?? [];
  const taken = ladder.map((_, i) => i + 1).filter((step) => flags.escalated.has(`${entry.approval}:${step}`));
  const step = taken.length === 0 ? 0 : Math.max(...taken);
  return {
    approval: entry.approval,
    kind: hold.kind ?? "loop",
    tenant: hold.tenant,
    tree_id: hold.tree_id,
    job_id: hold.job_id,
    run_id: hold.run_id,
    call_id: hold.call_id,
    call: hold.tool === undefined ? null : { plugin: hold.plugin ?? "", tool: hold.tool, function: hold.function ?? "" },
    asked_at: hold.asked_at ?? null,
    deadline: hold.at,
    step,
    escalated_to: step === 0 ? null : (ladder[step - 1]?.to ?? null),
    next: ladder.slice(step),
    evidence: hold.evidence ?? null,
    ...(hold.kind === "tool" ? { arguments: asJson(hold.arguments) } : {}),
  };
}

function asJson(text: string | undefined): unknown {
  if (text === undefined) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export interface ListFilter {
  readonly tenant?: string;
  readonly kind?: string;
}

/** Waiting approvals that pass the filter, soonest deadline first. */
export function listed(waiting: readonly WaitingApproval[], filter: ListFilter): WaitingApproval[] {
  return waiting.filter((w) => (filter.tenant === undefined || w.tenant === filter.tenant) && (filter.kind === undefined || w.kind === filter.kind)).sort((a, b) => a.deadline - b.deadline || a.approval.localeCompare(b.approval));
}

/** Who answered, as the decision's `processor` names a person: `person:<name>`. */
export function personProcessor(name: string): string {
  const trimmed = name.trim();
  if (!/^[\w.@+-]{1,128}$/.test(trimmed)) throw new Error(`${JSON.stringify(name)} is not a name an answer can carry: use letters, digits and . _ @ + - (up to 128)`);
  return `person:${trimmed}`;
}

/**
 * A person's answer to a waiting loop or tool call: approve (`allow`) or deny (`stop`; reason
 * LoopDetected for a loop, ToolDenied for a tool call), the comment as its message; an approval
 * of kind tool may carry the arguments the call is to be made with (TOOL-3), as the evidence's
 * `arguments`. Its ID is derived from the approval, the person and the verdict, so the same
 * answer sent twice is one answer.
 */
export function personAnswer(
  w: Pick<WaitingApproval, "approval" | "tenant" | "tree_id" | "job_id" | "run_id"> & { readonly kind?: "loop" | "tool" },
  answer: { verdict: "allow" | "stop"; person: string; comment?: string; now: number; arguments?: Record<string, unknown> },
): Decision {
  if (answer.arguments !== undefined && (w.kind !== "tool" || answer.verdict !== "allow")) throw new Error("arguments are given only with the approval of a tool call (kind tool)");
  const processor = personProcessor(answer.person);
  return {
    id: deriveId("approval-answer", w.approval, processor, answer.verdict),
    input_id: w.approval,
    processor,
    tenant: w.tenant,
    tree_id: w.tree_id,
    job_id: w.job_id,
    run_id: w.run_id,
    subject: w.approval,
    verdict: answer.verdict,
    reason_code: answer.verdict === "stop" ? (w.kind === "tool" ? "ToolDenied" : "LoopDetected") : null,
    limit: null,
    numbers: {},
    message: answer.comment ?? "",
    evidence: answer.arguments === undefined ? null : JSON.stringify({ arguments: answer.arguments }),
    ts: answer.now,
  };
}

function ago(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  const text = s < 90 ? `${s}s` : s < 5400 ? `${Math.round(s / 60)}m` : s < 172_800 ? `${Math.round(s / 3600)}h` : `${Math.round(s / 86_400)}d`;
  return ms >= 0 ? `in ${text}` : `${text} ago`;
}

/** The list as a person reads it: one block per approval. */
export function formatWaiting(waiting: readonly WaitingApproval[], now: number): string {
  if (waiting.length === 0) return "nothing waits for a person\n";
  const lines: string[] = [];
  for (const w of waiting) {
    const fn = w.call ? [w.call.plugin, w.call.tool, w.call.function].filter(Boolean).join(".") : "(call not kept)";
    lines.push(`${w.approval}  ${w.kind}  job ${w.job_id}  tenant ${w.tenant}`);
    const asked = w.asked_at === null ? "" : `asked ${new Date(w.asked_at).toISOString()}, `;
    lines.push(`  ${asked}deadline ${new Date(w.deadline).toISOString()} (${ago(w.deadline - now)})`);
    const e = w.evidence;
    if (w.kind === "tool") {
      lines.push(`  ${fn} requires approval before it runs (TOOL-3); a denial or the deadline refuses the call, the job goes on`);
      lines.push(`  arguments ${truncate(JSON.stringify(w.arguments ?? null), 200)}`);
    } else if (e) {
      const calls = e.calls?.length ? `, calls ${e.calls.map((c) => c.function).join(" -> ")}` : "";
      lines.push(`  ${e.detector}: ${fn} ${e.count} times (threshold ${e.threshold})${calls}`);
      if (e.arguments !== undefined) lines.push(`  arguments ${truncate(JSON.stringify(e.arguments), 200)}`);
    } else {
      lines.push(`  loop at ${fn} (evidence not kept for this hold)`);
    }
    const where = w.step === 0 ? "not escalated" : `escalation step ${w.step}, with ${w.escalated_to ?? "?"}`;
    const next = w.next[0] ? `; next: ${w.next[0].to} ${ago(w.next[0].at - now)}` : "";
    lines.push(`  ${where}${next}`);
    const changed = w.kind === "tool" ? " [--arguments JSON]" : "";
    lines.push(`  answer: oz0 approval approve ${w.job_id} ${w.approval}${changed}   or   oz0 approval deny ${w.job_id} ${w.approval} --comment "..."`);
  }
  return `${lines.join("\n")}\n`;
}

function truncate(s: string, n: number): string {
  return s.length <= n ? s : `${s.slice(0, n - 1)}…`;
}
