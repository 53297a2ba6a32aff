/**
 * An input the pipeline dead-lettered is answered at once to whoever awaits it (SYS-1, issue
 * 32): the runtime client reads `oz0.dead-letter`, decodes the dead letter's original bytes
 * with the schema of the topic they came from, and answers the awaited event (by its ID) with a
 * refusal that says the guard rails could not decide it, with the dead letter's reason. Fail
 * closed: a call is refused, an ask not admitted, a result not read. The dead letter itself stays
 * on its topic for an operator to republish. Pure: no I/O here.
 */
import type { DeadLetter, Decision, ResultDelivered } from "../schemas/types.ts";
import { Oz0Error } from "../lib/errors.ts";
import type { SchemaName } from "../schemas/catalog.ts";
import { TOPICS } from "../topology/topics.ts";
import { READ_RESULT } from "./read-result.ts";

/** The reason code of a refusal made for a dead-lettered input. */
export const DEAD_LETTERED = "DeadLettered";

/** The processor named on an answer made for a dead letter: the client, not a processor of the pipeline. */
export const DEAD_LETTER_ANSWERER = "runtime-client";

/** The answer kinds a dead letter answers, by what the original input was. */
export type DeadLetterAnswer = "admission" | "callDecision" | "delivered" | "decidedCall";

/** The fields of an original input a refusal is addressed by; every input topic's event has them but `subject`'s source. */
export interface OriginalEvent {
  readonly id: string;
  readonly tenant: string;
  readonly tree_id: string;
  readonly job_id: string;
  readonly run_id?: string | null;
  readonly call_id?: string;
  readonly request_id?: string;
  readonly plugin?: string;
  readonly tool?: string;
  readonly function?: string;
  readonly kind?: string;
}

/** The schema the input topic `topic` carries, or null for a topic the pipeline does not know (such as a bench's). */
export function originalSchema(topic: string): SchemaName | null {
  return TOPICS.find((t) => t.name === topic)?.schema ?? null;
}

function isObject(x: unknown): x is Record<string, unknown> {
  return x !== null && typeof x === "object" && !Array.isArray(x);
}

/** The decoded original, when it is an event with the fields a refusal needs; else null (nothing can be matched). */
export function originalEvent(decoded: unknown): OriginalEvent | null {
  if (!isObject(decoded)) return null;
  for (const f of ["id", "tenant", "tree_id", "job_id"] as const) if (typeof decoded[f] !== "string" || decoded[f] === "") return null;
  return decoded as unknown as OriginalEvent;
}

const isReadResult = (e: OriginalEvent): boolean => e.plugin === READ_RESULT.plugin && e.tool === READ_RESULT.tool && e.function === READ_RESULT.function;

/**
 * Which answers the dead-lettered input was awaited as, from the topic it came from: a model
 * ask or a child ask, an admission; a tool call, its decision and the call as decided (an
 * oz.read_result call, what it reads back); a tool result, what the model reads. Other topics'
 * inputs (decisions, approvals, config) answer no runtime's await.
 */
export function answersOf(topic: string, e: OriginalEvent): DeadLetterAnswer[] {
  switch (topic) {
    case "oz0.model-calls":
      return e.kind === "ask" ? ["admission"] : [];
    case "oz0.jobs":
      return e.kind === "child_ask" ? ["admission"] : [];
    case "oz0.tool-calls.requested":
    case "oz0.tool-calls":
      return isReadResult(e) ? ["delivered"] : ["callDecision", "decidedCall"];
    case "oz0.tool-results":
    case "oz0.tool-results.watched":
      return ["delivered"];
    default:
      return [];
  }
}

const WHAT: Record<string, string> = {
  "oz0.model-calls": "model-call ask",
  "oz0.jobs": "child ask",
  "oz0.tool-calls.requested": "tool call",
  "oz0.tool-calls": "tool call",
  "oz0.tool-results": "tool result",
  "oz0.tool-results.watched": "tool result",
};

/** What the model and the runtime read: the guard rails could not decide it, why, and that it was not let through. */
export function deadLetterWords(dl: Pick<DeadLetter, "id" | "processor" | "topic" | "reason">, e: OriginalEvent): string {
  const what = isReadResult(e) ? "oz.read_result call" : (WHAT[dl.topic] ?? "input");
  const reason = dl.reason.trim();
  return (
    `The guard rails could not decide this ${what} (event ${e.id}): ${dl.processor} dead-lettered it: ${reason}${/[.!?]$/.test(reason) ? "" : "."} ` +
    `Nothing was let through. The input is kept on oz0.dead-letter (${dl.id}) for an operator to fix and republish (oz0 doctor lists it).`
  );
}

type Where = Pick<DeadLetter, "id" | "processor" | "topic" | "partition" | "offset" | "reason" | "error">;

/** Where the dead letter is and why, as a refusal for it names it. */
function where(dl: Where): Where {
  return { id: dl.id, processor: dl.processor, topic: dl.topic, partition: dl.partition, offset: dl.offset, error: dl.error, reason: dl.reason };
}

/** What a refusal for a dead letter keeps as its evidence. */
function evidence(dl: Where): string {
  return JSON.stringify({ dead_letter: where(dl) });
}

/** The refusal of a dead-lettered ask or call, addressed as the pipeline's decision of it would be. */
export function deadLetterDecision(dl: DeadLetter, e: OriginalEvent): Decision {
  return {
    id: `dead-letter:${dl.id}`,
    input_id: e.id,
    processor: DEAD_LETTER_ANSWERER,
    tenant: e.tenant,
    tree_id: e.tree_id,
    job_id: e.job_id,
    run_id: e.run_id ?? null,
    subject: e.call_id ?? e.request_id ?? e.job_id,
    verdict: "refuse",
    reason_code: DEAD_LETTERED,
    limit: null,
    numbers: {},
    message: deadLetterWords(dl, e),
    evidence: evidence(dl),
    ts: dl.ts,
  };
}

/** What the model reads for a dead-lettered result or oz.read_result call: a failed call with the words, never the result. */
export function deadLetterDelivered(dl: DeadLetter, e: OriginalEvent): ResultDelivered {
  const words = deadLetterWords(dl, e);
  return {
    id: `dead-letter:${dl.id}`,
    input_id: e.id,
    processor: DEAD_LETTER_ANSWERER,
    tenant: e.tenant,
    tree_id: e.tree_id,
    job_id: e.job_id,
    run_id: e.run_id ?? "",
    call_id: e.call_id ?? "",
    plugin: e.plugin ?? "",
    tool: e.tool ?? "",
    function: e.function ?? "",
    is_error: true,
    content: JSON.stringify({ content: [{ type: "text", text: words }], isError: true, _meta: { "oz0/decision": { verdict: "refuse", reason_code: DEAD_LETTERED, limit: null, processor: DEAD_LETTER_ANSWERER }, "oz0/dead_letter": where(dl) } }),
    truncated: false,
    fit: null,
    ts: dl.ts,
  };
}

/** The error a client's await of the call as decided rejects with when the call was dead-lettered: there is no decided call. */
export class DeadLettered extends Oz0Error {
  readonly deadLetter: Pick<DeadLetter, "id" | "processor" | "topic" | "reason">;
  readonly inputId: string;

  constructor(dl: DeadLetter, e: OriginalEvent) {
    super(deadLetterWords(dl, e));
    this.name = "DeadLettered";
    this.deadLetter = { id: dl.id, processor: dl.processor, topic: dl.topic, reason: dl.reason };
    this.inputId = e.id;
  }
}
