/**
 * The MCP gateway (`oz0 mcp`): an MCP server to the agent and an MCP client to the plugin's own
 * server, asking the guard rails about every call through the runtime client.
 *
 * - `tools/list`: the server's tools, input schemas untouched, and `oz.read_result` (OFF-7).
 * - `tools/call`: published to `oz0.tool-calls.requested`; the server is called only on an
 *   `allow` or a `report`, with the arguments as the pipeline decided them (a filled-in budget,
 *   FIT-15; file arguments as local paths, FILE-1). A `wait` waits for a person (or the
 *   approval's deadline), telling the agent so with progress notifications; `stop` and
 *   `refuse` give the agent the pipeline's words as a tool error.
 * - The server's result goes to `oz0.tool-results` (stored as a file of the tree first when it
 *   is big, so large bytes never pass through Kafka) with its labels (OFF-9: the manifest's
 *   `labels:` and the result's `_meta["oz0/labels"]`), and the agent reads what the pipeline
 *   delivered for it: fitted, offloaded, as it was, or a failed call.
 * - Finish-only (LOOP-7's no progress, LIM-8's soft wall): once a decision or a delivered result
 *   says only the answer is left, the server's tools are withdrawn from `tools/list`
 *   (`notifications/tools/list_changed`) and a call made anyway reads the same words.
 * - An input the pipeline dead-letters is answered at once by the runtime client: a refusal
 *   with the dead letter's reason, never the call made.
 *
 * Without an answer from the pipeline in time, the agent gets an error saying what to check;
 * the server is never called without a decision, and every result the server gave is published.
 */
import { mkdir, writeFile, chmod, rename } from "node:fs/promises";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema, ToolListChangedNotificationSchema, type CallToolResult, type Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Logger } from "../../processors/runner/log.ts";
import type { Decision, JobEvent, ToolCall } from "../../schemas/types.ts";
import type { FileReader } from "../../store/files.ts";
import { FILES_META_KEY } from "../../processors/files/arguments.ts";
import { approvedArguments } from "../../processors/loops/tool-approval.ts";
import { REF_PREFIX } from "../../store/objects.ts";
import { NoAnswer, readResultCall, type CallContext, type ReadResultArgs, type RuntimeClient } from "../runtime-client.ts";
import { READ_RESULT_NAME } from "../read-result.ts";
import {
  approvalOf,
  callArguments,
  deliveredAnswer,
  failedAnswer,
  finishOnlyAnswer,
  finishOnlyOf,
  listedTools,
  noProgressOf,
  resultLabels,
  unlabelledAnswer,
  noAnswerText,
  refusedAnswer,
  requestOf,
  serverErrorAnswer,
  toolCallEvent,
  toolResultEvent,
  waitingMessage,
  waitUntil,
  type FinishOnly,
  type ListedTool,
  type Target,
  type ToolAnswer,
} from "./calls.ts";

/** Where the gateway keeps and reads the tree's files (MinIO, by the file store). */
export interface GatewayFiles {
  store(owner: { tenant: string; tree: string }, bytes: Buffer, options?: { labels?: readonly string[] }): Promise<{ ref: string }>;
  read(reader: FileReader, ref: string): Promise<{ bytes: Buffer }>;
  /** The call's tree as a reader, with its earlier turns (FILE-3). */
  reader(tenant: string, tree: string): Promise<FileReader>;
}

export interface GatewaySettings {
  /** How long the pipeline has to decide a call and to deliver a result. @default 30000 */
  readonly answerMs?: number;
  /** A result weighing more than this is stored as a file of the tree and published by ref. @default 262144 */
  readonly inlineMaxBytes?: number;
  /** How often a waiting call tells the agent it still waits. @default 15000 */
  readonly progressEveryMs?: number;
  /** How long after a wait's deadline the pipeline has to decide it. @default 60000 */
  readonly deadlineGraceMs?: number;
  /** A wait whose decision names no deadline waits this long at most. @default 86400000 */
  readonly waitMaxMs?: number;
  /** How long the server has to answer a call. @default 600000 */
  readonly serverMs?: number;
  /** Where files handed to a call are put (FILE-1), one per digest. */
  readonly filesDir: string;
}

export interface GatewayDeps {
  readonly runtime: RuntimeClient;
  readonly upstream: Client;
  readonly files: GatewayFiles;
  readonly session: CallContext;
  readonly target: Target;
  readonly log: Logger;
  readonly settings: GatewaySettings;
  /** OFF-9: the labels every result of the tool carries (the manifest's `labels:`). @default [] */
  readonly labels?: readonly string[];
  /**
   * LIM-3: the session's job event of a wait for a person (`wait_started` when a call waits,
   * `wait_ended` when it is settled), published on `oz0.jobs` so the wait counts against the
   * tree's `wait`. Left out, waits are not reported.
   */
  readonly waitEvent?: (kind: "wait_started" | "wait_ended") => JobEvent;
}

type Extra = { signal: AbortSignal; _meta?: { progressToken?: string | number }; sendNotification: (n: { method: "notifications/progress"; params: { progressToken: string | number; progress: number; total?: number; message?: string } }) => Promise<void> };

const asResult = (a: ToolAnswer): CallToolResult => a as unknown as CallToolResult;

export class McpGateway {
  readonly #d: GatewayDeps;
  readonly #answerMs: number;
  readonly #inlineMax: number;
  /** The decisions that name a call of this session by its call ID (`subject`), kept until the call is settled, and who waits to hear of them. */
  readonly #bySubject = new Map<string, { readonly kept: Decision[]; heard?: () => void }>();
  readonly #unlisten: () => void;
  #calls = 0;
  /** Set once only the answer is left (LOOP-7, LIM-8): the tools are withdrawn and every call reads these words. */
  #finishOnly: FinishOnly | null = null;
  #server: Server | undefined;

  constructor(deps: GatewayDeps) {
    this.#d = deps;
    this.#answerMs = deps.settings.answerMs ?? 30_000;
    this.#inlineMax = deps.settings.inlineMaxBytes ?? 256 * 1024;
    const unlistenCalls = deps.runtime.onCallDecision((d) => {
      this.heardFinishOnly(d);
      const call = this.#bySubject.get(d.subject);
      if (call === undefined || d.run_id !== deps.session.run_id) return;
      call.kept.push(d);
      call.heard?.();
    });
    // LIM-8: the soft wall is reported on oz0.admissions to the job whose usage crossed it, and holds for the whole tree.
    const unlistenAdmissions = deps.runtime.onAdmission((d) => this.heardFinishOnly(d));
    this.#unlisten = () => {
      unlistenCalls();
      unlistenAdmissions();
    };
  }

  /** A decision of this session's run (or, for the soft wall, its tree) that leaves only the answer. */
  private heardFinishOnly(d: Decision): void {
    const f = finishOnlyOf(d);
    if (f === null) return;
    const s = this.#d.session;
    if (d.tenant !== s.tenant || d.tree_id !== s.tree_id) return;
    if (f.scope === "run" && d.run_id !== s.run_id) return;
    this.becomeFinishOnly(f);
  }

  /** Only the answer is left: the server's tools are withdrawn, and the agent is told the list changed. */
  private becomeFinishOnly(f: FinishOnly): void {
    if (this.#finishOnly !== null) return;
    this.#finishOnly = f;
    this.#d.log.info("only the answer is left: the server's tools are withdrawn", { reason_code: f.reason_code, limit: f.limit });
    this.#server?.sendToolListChanged().catch(() => undefined);
  }

  /** The words of a finish-only run, or null while its tools are callable. */
  get finishOnly(): FinishOnly | null {
    return this.#finishOnly;
  }

  /** Installs the handlers on the agent's side, and passes the server's tool-list changes on. */
  attach(server: Server): void {
    this.#server = server;
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: (await this.tools()) as Tool[] }));
    server.setRequestHandler(CallToolRequestSchema, async (req, extra) => asResult(await this.call(req.params.name, req.params.arguments, req.params._meta, extra as unknown as Extra)));
    this.#d.upstream.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      await server.sendToolListChanged().catch(() => undefined);
    });
  }

  /** Stops hearing the runtime client's decisions: the session is over. */
  close(): void {
    this.#unlisten();
  }

  /** Calls made through the gateway so far (tools/call requests answered). */
  get calls(): number {
    return this.#calls;
  }

  async tools(): Promise<ListedTool[]> {
    if (this.#finishOnly !== null) return listedTools([], true);
    const all: ListedTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#d.upstream.listTools(cursor ? { cursor } : undefined);
      all.push(...(page.tools as ListedTool[]));
      cursor = page.nextCursor;
    } while (cursor);
    return listedTools(all);
  }

  async call(name: string, args: Record<string, unknown> | undefined, meta: Record<string, unknown> | undefined, extra: Extra): Promise<ToolAnswer> {
    this.#calls += 1;
    try {
      if (name === READ_RESULT_NAME) return await this.readResult(args ?? {});
      return await this.toolCall(name, callArguments(args, meta), extra);
    } catch (err) {
      if (err instanceof NoAnswer) return failedAnswer(noAnswerText(name, err));
      this.#d.log.error("a call through the gateway failed", { function: name, error: err instanceof Error ? err.message : String(err) });
      return failedAnswer(`The call of ${name} failed in the gateway: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private async readResult(args: Record<string, unknown>): Promise<ToolAnswer> {
    const d = await this.#d.runtime.readResult(readResultCall(this.#d.session, args as unknown as ReadResultArgs), this.#answerMs);
    return deliveredAnswer(d);
  }

  private async toolCall(name: string, args: Record<string, unknown>, extra: Extra): Promise<ToolAnswer> {
    const call = toolCallEvent(this.#d.session, this.#d.target, name, args);
    this.#bySubject.set(call.call_id, { kept: [] });
    try {
      return await this.decideAndCall(name, call, extra);
    } finally {
      this.#bySubject.delete(call.call_id);
    }
  }

  private async decideAndCall(name: string, call: ToolCall, extra: Extra): Promise<ToolAnswer> {
    const { runtime } = this.#d;
    // The call as decided comes in the transaction of its decision; awaited first, so it is
    // not missed, and given up on at once if the decision never comes.
    const decidedP = runtime.awaitDecidedCall(call.id, this.#answerMs);
    decidedP.catch(() => undefined);
    let decision = await runtime.requestToolCall(call, this.#answerMs);
    // A call refused or stopped has no decided call to wait for (a dead-lettered one has none at all).
    if (decision.verdict === "stop" || decision.verdict === "refuse") return this.refused(decision);
    const decided = await decidedP.catch((err: unknown) => {
      // A decision came but not the decided call: the arguments as asked, logged.
      this.#d.log.warn("the decided call did not come with its decision; the call goes with its arguments as asked", { event: call.id, error: err instanceof Error ? err.message : String(err) });
      return call;
    });
    if (decision.verdict === "wait") decision = await this.waitForPerson(call, decision, extra);
    if (decision.verdict === "stop" || decision.verdict === "refuse" || decision.verdict === "wait") return this.refused(decision);
    // Only the answer is left, though this decision let the call go (it came before the pipeline knew): refused all the same.
    if (this.#finishOnly !== null) return finishOnlyAnswer(this.#finishOnly);
    // allow, report: the server is called with the arguments the pipeline decided on, or those a person approved (TOOL-3).
    const approved = approvedArguments(decision);
    const made = approved === null ? decided : { ...decided, arguments: approved };
    const answer = await this.callServer(name, made, extra);
    return this.deliver(made, answer);
  }

  /** The pipeline's refusal as the agent reads it; one that leaves only the answer withdraws the tools. */
  private refused(decision: Decision): ToolAnswer {
    const f = finishOnlyOf(decision);
    if (f !== null) this.becomeFinishOnly(f);
    return refusedAnswer(decision);
  }

  /**
   * A `wait`: the decision that settles the call (a person's answer, the deadline, the loop it
   * waited behind), which names the call by its call ID; the agent is told it waits, and why,
   * until it comes. An escalation (another `wait`) changes what the agent is told.
   */
  private async waitForPerson(call: ToolCall, wait: Decision, extra: Extra): Promise<Decision> {
    await this.reportWait("wait_started", call);
    try {
      return await this.waitForAnswer(call, wait, extra);
    } finally {
      await this.reportWait("wait_ended", call);
    }
  }

  /** LIM-3: a wait for a person, reported on `oz0.jobs` (a failure is logged: the call is still decided). */
  private async reportWait(kind: "wait_started" | "wait_ended", call: ToolCall): Promise<void> {
    const event = this.#d.waitEvent?.(kind);
    if (!event) return;
    await this.#d.runtime.publishJobEvents([event]).catch((err: unknown) => this.#d.log.warn(`the ${kind} of a waiting call could not be published: the tree's wait does not count it`, { call: call.call_id, error: String(err) }));
  }

  private async waitForAnswer(call: ToolCall, wait: Decision, extra: Extra): Promise<Decision> {
    const s = this.#d.settings;
    const until = waitUntil(wait, Date.now(), s.waitMaxMs ?? 86_400_000) + (s.deadlineGraceMs ?? 60_000);
    let message = waitingMessage(wait);
    const token = extra._meta?.progressToken;
    let progress = 0;
    const tell = (): void => {
      if (token === undefined) return;
      progress += 1;
      extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, message } }).catch(() => undefined);
    };
    tell();
    const timer = setInterval(tell, s.progressEveryMs ?? 15_000);
    try {
      return await new Promise<Decision>((resolve, reject) => {
        const settle = (): void => {
          for (const d of this.#bySubject.get(call.call_id)?.kept.splice(0) ?? []) {
            if (d.input_id === call.id) continue; // the wait itself, or a copy of it
            if (d.verdict !== "wait") return finish(() => resolve(d));
            message = waitingMessage(d);
          }
        };
        const timeout = setTimeout(() => finish(() => reject(new NoAnswer("callDecision", call.id, until - wait.ts, `no decision settled the call ${call.id} (approval ${approvalOf(wait) ?? "unnamed"}) by its deadline; check the loop processors' lag (oz0 doctor) and oz0 approval list`))), Math.max(1_000, until - Date.now()));
        const finish = (done: () => void): void => {
          clearTimeout(timeout);
          extra.signal.removeEventListener("abort", aborted);
          done();
        };
        const aborted = (): void => finish(() => resolve(wait));
        extra.signal.addEventListener("abort", aborted, { once: true });
        const heard = this.#bySubject.get(call.call_id);
        if (heard) heard.heard = settle;
        settle();
      });
    } finally {
      clearInterval(timer);
    }
  }

  private async callServer(name: string, decided: ToolCall, extra: Extra): Promise<ToolAnswer> {
    const request = requestOf(JSON.parse(decided.arguments) as Record<string, unknown>);
    const meta = request._meta ? await this.handFiles(decided, request._meta) : undefined;
    const token = extra._meta?.progressToken;
    try {
      const result = await this.#d.upstream.callTool({ name, arguments: request.arguments, ...(meta ? { _meta: meta } : {}) }, undefined, {
        timeout: this.#d.settings.serverMs ?? 600_000,
        signal: extra.signal,
        resetTimeoutOnProgress: true,
        // The server's own progress passes to the agent under the agent's token.
        ...(token !== undefined
          ? { onprogress: (p: { progress: number; total?: number; message?: string }) => void extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, ...p } }).catch(() => undefined) }
          : {}),
      });
      return result as unknown as ToolAnswer;
    } catch (err) {
      return serverErrorAnswer(name, err);
    }
  }

  /**
   * FILE-1: the files the pipeline resolved for the call (`_meta["oz0/files"]`, argument name to
   * `/oz0/files/<hex>`) put under the gateway's files folder, read-only, and named by that path.
   */
  private async handFiles(call: ToolCall, meta: Record<string, unknown>): Promise<Record<string, unknown>> {
    const files = meta[FILES_META_KEY];
    if (files === null || typeof files !== "object" || Array.isArray(files)) return meta;
    const dir = this.#d.settings.filesDir;
    const local: Record<string, string> = {};
    let reader: FileReader | undefined;
    await mkdir(dir, { recursive: true });
    for (const [arg, path] of Object.entries(files as Record<string, unknown>)) {
      const hex = typeof path === "string" ? path.split("/").pop() ?? "" : "";
      if (!/^[0-9a-f]{64}$/.test(hex)) continue;
      reader ??= await this.#d.files.reader(call.tenant, call.tree_id);
      const file = await this.#d.files.read(reader, `${REF_PREFIX}${hex}`);
      const to = join(dir, hex);
      const partial = `${to}.${process.pid}.part`;
      await writeFile(partial, file.bytes, { mode: 0o444 });
      await rename(partial, to);
      await chmod(to, 0o444);
      local[arg] = to;
    }
    return { ...meta, [FILES_META_KEY]: local };
  }

  /**
   * Publishes the server's answer (by ref when it is big) with its labels (OFF-9) and returns
   * what the pipeline delivered. An answer whose `_meta["oz0/labels"]` is not a list of names
   * is published, and read, as a failed call that says so: its labels cannot be known.
   */
  private async deliver(call: ToolCall, served: ToolAnswer): Promise<ToolAnswer> {
    const manifest = this.#d.labels ?? [];
    const labelled = resultLabels(manifest, served);
    const answer = "error" in labelled ? unlabelledAnswer(call.function, labelled.error) : served;
    const labels = "error" in labelled ? [...manifest] : labelled.labels;
    if ("error" in labelled) this.#d.log.warn("a result's labels are not a list of names: the result is withheld", { function: call.function, error: labelled.error });
    const json = JSON.stringify(answer);
    const size = Buffer.byteLength(json);
    const body = size > this.#inlineMax ? { ref: (await this.#d.files.store({ tenant: call.tenant, tree: call.tree_id }, Buffer.from(json), { labels })).ref } : { content: json };
    const result = toolResultEvent(call, answer, { ...body, size }, labels);
    try {
      const delivered = deliveredAnswer(await this.#d.runtime.deliverToolResult(result, this.#answerMs));
      const f = noProgressOf(delivered);
      if (f !== null) this.becomeFinishOnly(f);
      return delivered;
    } catch (err) {
      if (!(err instanceof NoAnswer)) throw err;
      // The result is published: the pipeline delivers it when it catches up. The agent is told
      // the call was made and what to check, never given the undelivered result instead.
      return failedAnswer(`The call of ${call.function} was made, but the guard rails did not deliver its result in time. ${err.message}`);
    }
  }
}
