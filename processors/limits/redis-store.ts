/**
 * The limits state in Redis: one hash per tree (Keys.limits), changed only by the Lua scripts
 * `limits*` in store/redis/lua/, each one atomic step that is idempotent by its input. A
 * Redis failure is classified by what the server said (`store/redis/errors.ts`): a
 * TransientError (the runner tries the batch again) or a StoreRefused naming the tree's key
 * (its inputs are dead-lettered; other trees go on).
 *
 * The two smaller ports follow: jobs' endings in the same hash (HMGET, the script jobEnding)
 * and the unknown outcomes waiting for a person, one hash per approval and an index of those
 * waiting by deadline, both in the `{outcomes}` slot, so answering and leaving the index are one
 * step (the scripts unknownOutcomePut and unknownOutcomeAnswer).
 */
import type { RedisClient } from "../../store/redis/client.ts";
import type { Reserve, OnBudget } from "../../config/agent.ts";
import type { Keys } from "../../store/redis/keys.ts";
import { redisCall, redisFailure } from "../../store/redis/errors.ts";
import { defineScript, flag, ignored, type Script } from "../../store/redis/script.ts";
import { TransientError } from "../runner/errors.ts";
import type { CallAnswer, ChildAnswer, SettleAnswer, WaitAnswer } from "./admission.ts";
import { callCode, childCode } from "./codes.ts";
import { redisBudgetStore, type RedisBudgetOptions } from "./redis-budget-store.ts";
import type { BudgetAnswer, BudgetRequest } from "./budget-requests.ts";
import type { EndingRecord } from "./standing.ts";
import { standingFields, type LimitsStore, type StandingStore, type TreeStepAnswer, type UnknownOutcomeStore } from "./store.ts";
import type { TreeSettings } from "./tree-settings.ts";
import type { UnknownOutcomeAnswer, UnknownOutcomeRequest } from "./unknown-outcomes.ts";

export interface RedisLimitsOptions extends RedisBudgetOptions {
  /** Seconds a tree's state lives after its last event. @default 7 days */
  readonly ttlSeconds?: number;
  /** Seconds it lives once its root job ended (replays still answer the same). @default 1 day */
  readonly endedTtlSeconds?: number;
}

const SETTING_FIELDS = ["s:tenant", "s:root", "s:person", "s:budget", "s:reserve", "s:on_budget", "s:model_calls", "s:tokens", "s:children", "s:fan_out", "s:depth", "s:wait", "s:warn", "s:wall", "s:principal", "s:team"] as const;

function settingPairs(s: TreeSettings): string[] {
  const values: Record<(typeof SETTING_FIELDS)[number], string | number> = {
    "s:tenant": s.tenant,
    "s:root": s.rootAgent,
    "s:person": s.startedByPerson ? 1 : 0,
    "s:budget": s.budget,
    "s:reserve": s.reserve,
    "s:on_budget": s.onBudget,
    "s:model_calls": s.modelCalls,
    "s:tokens": s.tokens,
    "s:children": s.children,
    "s:fan_out": s.fanOut,
    "s:depth": s.depth,
    "s:wait": s.wait,
    "s:warn": s.warnShare,
    "s:wall": s.softWall,
    "s:principal": s.principal ?? "",
    "s:team": s.team ?? "",
  };
  return SETTING_FIELDS.flatMap((f) => [f, String(values[f])]);
}

function settingsFrom(values: ReadonlyArray<string | null>): TreeSettings | null {
  const [tenant, root, person, budget, reserve, onBudget, modelCalls, tokens, children, fanOut, depth, wait, warn, wall, principal, team] = values;
  if (tenant === null || tenant === undefined) return null;
  return {
    tenant,
    rootAgent: root ?? "",
    startedByPerson: person === "1",
    budget: Number(budget),
    reserve: reserve as Reserve,
    onBudget: onBudget as OnBudget,
    modelCalls: Number(modelCalls),
    tokens: Number(tokens),
    children: Number(children),
    fanOut: Number(fanOut),
    depth: Number(depth),
    wait: Number(wait),
    warnShare: Number(warn),
    softWall: Number(wall),
    ...(principal ? { principal } : {}),
    ...(team ? { team } : {}),
  };
}

function numbers(reply: unknown, fail: (expected: string) => never, script: string, treeId: string): number[] {
  if (!Array.isArray(reply) || reply.some((v) => typeof v !== "number")) fail(`a list of integers (tree ${treeId})`);
  const list = reply as number[];
  // The tree's state expired between the read and the script: the batch is tried again and re-initialises it.
  if (list[0] === -1 && list.length === 1) throw new TransientError(`tree ${treeId} lost its limits state before ${script} ran; trying again sets it anew`, { dependency: "redis" });
  return list;
}

const at = (list: number[], i: number): number => list[i] ?? 0;

const indexMember = (r: Pick<BudgetRequest, "tenant" | "tree_id" | "approval">): string => `${r.tenant}\n${r.tree_id}\n${r.approval}`;

/** A script on one tree's limits hash, given its arguments in order; answers integers. */
interface TreeStep {
  readonly tenant: string;
  readonly tree: string;
  readonly args: ReadonlyArray<string | number>;
}

type TreeScript = Script<TreeStep, number[]>;

function treeScript(name: string): TreeScript {
  return defineScript({
    name,
    keys: (k, i: TreeStep) => [k.limits(i.tenant, i.tree)],
    args: (i) => [...i.args],
    reply: (raw, fail, i) => numbers(raw, fail, name, i.tree),
    what: (i) => `running ${name} for tree ${i.tree}`,
  });
}

/** A model call's admission: code, spent, reserved, model calls, tokens, the run's steps and tokens. */
export const limitsAdmitCall = treeScript("limitsAdmitCall");
/** A usage or a rewarm: spent, reserved, model calls, tokens, spent before. */
export const limitsSettle = treeScript("limitsSettle");
/** A batch's asks, usages and rewarms of one tree in order: 7 numbers each. */
export const limitsTreeSteps = treeScript("limitsTreeSteps");
/** A child job's phase: code, children, running, delegations, delegation depth, spent. */
export const limitsChild = treeScript("limitsChild");
/** A job's end or a wait's start or end: waited, over. */
export const limitsJobEvent = treeScript("limitsJobEvent");

/** A tree's settings and root job, kept when first given (or when `authoritative`). */
export const limitsInit = defineScript({
  name: "limitsInit",
  keys: (k, i: { readonly tenant: string; readonly tree: string; readonly settings: TreeSettings; readonly authoritative: boolean; readonly ttl: number; readonly root: { readonly jobId?: string; readonly agent?: string; readonly runId?: string; readonly at?: number; readonly timeout?: number; readonly session?: boolean } | null | undefined }) => [k.limits(i.tenant, i.tree)],
  args: ({ root, ...i }) => [i.authoritative ? 1 : 0, i.ttl, root?.jobId ?? "", root?.agent ?? "", root?.runId ?? "", root?.at ?? -1, root?.timeout ?? -1, root?.session ? 1 : 0, ...settingPairs(i.settings)],
  reply: ignored,
  what: (i) => `setting the limits of tree ${i.tree}`,
});

/** Answers a budget request once: the answer that holds (JSON), or null when the tree keeps no such request. */
export const limitsBudgetAnswer = defineScript({
  name: "limitsBudgetAnswer",
  keys: (k, i: { readonly request: Pick<BudgetRequest, "tenant" | "tree_id" | "approval">; readonly answer: BudgetAnswer; readonly ttl: number }) => [k.limits(i.request.tenant, i.request.tree_id)],
  args: (i) => [i.request.approval, JSON.stringify(i.answer), i.answer.budget, i.ttl],
  reply: (raw, fail) => {
    if (typeof raw !== "string") return fail('the answer (JSON) or ""');
    return raw === "" ? null : (JSON.parse(raw) as BudgetAnswer);
  },
  what: (i) => `answering budget request ${i.request.approval}`,
});

export function redisLimitsStore(redis: RedisClient, keys: Keys, options: RedisLimitsOptions = {}): LimitsStore {
  const ttl = options.ttlSeconds ?? 7 * 24 * 3600;
  const endedTtl = options.endedTtlSeconds ?? 24 * 3600;

  const call = (script: TreeScript, tenant: string, treeId: string, args: Array<string | number>): Promise<number[]> => script.run(redis, keys, { tenant, tree: treeId, args });

  return {
    ...redisBudgetStore(redis, keys, options),
    read: (tenant, treeId, jobId) =>
      redisCall(`reading tree ${treeId}`, keys.limits(tenant, treeId), async () => {
        const values = await redis.hmget(keys.limits(tenant, treeId), ...SETTING_FIELDS, `job:${jobId}:agent`, `job:${jobId}:at`, `job:${jobId}:tmo`, `job:${jobId}:sess`);
        const [agent, at, timeout, session] = values.slice(SETTING_FIELDS.length);
        const orNone = (v: string | null | undefined) => (v === null || v === undefined ? -1 : Number(v));
        return { settings: settingsFrom(values.slice(0, SETTING_FIELDS.length)), jobAgent: agent ?? "", jobStart: orNone(at), jobTimeout: orNone(timeout), jobSession: session === "1" };
      }),

    async init(tenant, treeId, settings, authoritative, root) {
      await limitsInit.run(redis, keys, { tenant, tree: treeId, settings, authoritative, ttl, root });
      const now = await redisCall(`reading tree ${treeId}`, keys.limits(tenant, treeId), () => redis.hmget(keys.limits(tenant, treeId), ...SETTING_FIELDS));
      return settingsFrom(now) ?? settings;
    },

    async admitCall(tenant, treeId, ask): Promise<CallAnswer> {
      const r = await call(limitsAdmitCall, tenant, treeId, [ask.requestId, ask.runId, ask.inputTokens, ask.worst, ask.maxSteps, ask.maxTokens, ask.deadline, ask.now, ttl]);
      return { code: callCode(at(r, 0)), spent: at(r, 1), reserved: at(r, 2), modelCalls: at(r, 3), tokens: at(r, 4), runSteps: at(r, 5), runTokens: at(r, 6) };
    },

    async settleCall(tenant, treeId, u): Promise<SettleAnswer> {
      const r = await call(limitsSettle, tenant, treeId, ["usage", u.requestId, u.runId, u.inputTokens, u.outputTokens, u.cost, ttl]);
      return { spent: at(r, 0), reserved: at(r, 1), modelCalls: at(r, 2), tokens: at(r, 3), spentBefore: at(r, 4) };
    },

    async rewarm(tenant, treeId, requestId, cost): Promise<SettleAnswer> {
      const r = await call(limitsSettle, tenant, treeId, ["rewarm", requestId, "", 0, 0, cost, ttl]);
      return { spent: at(r, 0), reserved: at(r, 1), modelCalls: at(r, 2), tokens: at(r, 3), spentBefore: at(r, 4) };
    },

    async treeSteps(tenant, treeId, steps): Promise<TreeStepAnswer[]> {
      if (steps.length === 0) return [];
      const args: Array<string | number> = [ttl, steps.length];
      for (const s of steps) {
        if (s.kind === "ask") args.push("ask", s.ask.requestId, s.ask.runId, s.ask.inputTokens, s.ask.worst, s.ask.maxSteps, s.ask.maxTokens, s.ask.deadline, s.ask.now);
        else if (s.kind === "usage") args.push("usage", s.usage.requestId, s.usage.runId, s.usage.inputTokens, s.usage.outputTokens, s.usage.cost, "", "", "");
        else args.push("rewarm", s.requestId, "", 0, 0, s.cost, "", "", "");
      }
      const r = await call(limitsTreeSteps, tenant, treeId, args);
      if (r.length !== 7 * steps.length) throw new Error(`script limitsTreeSteps answered ${r.length} numbers for ${steps.length} steps of tree ${treeId}, not 7 each`);
      return steps.map((s, i): TreeStepAnswer => {
        const o = 7 * i;
        if (s.kind === "ask") return { kind: "ask", answer: { code: callCode(at(r, o)), spent: at(r, o + 1), reserved: at(r, o + 2), modelCalls: at(r, o + 3), tokens: at(r, o + 4), runSteps: at(r, o + 5), runTokens: at(r, o + 6) } };
        return { kind: s.kind, answer: { spent: at(r, o), reserved: at(r, o + 1), modelCalls: at(r, o + 2), tokens: at(r, o + 3), spentBefore: at(r, o + 4) } };
      });
    },

    async child(tenant, treeId, phase, a): Promise<ChildAnswer> {
      const r = await call(limitsChild, tenant, treeId, [phase, a.jobId, a.parentJobId, a.parentRunId, a.runId, a.agent, a.depth, a.delegating ? 1 : 0, a.parentMaxDepth, a.parentMaxChildren, ttl, a.at, a.parentDeadline, a.quotaSpent ? 1 : 0, a.timeout, a.session ? 1 : 0]);
      return { code: childCode(at(r, 0)), phase, children: at(r, 1), running: at(r, 2), delegations: at(r, 3), delegationDepth: at(r, 4), spent: at(r, 5) };
    },

    async endJob(tenant, treeId, jobId, root) {
      await call(limitsJobEvent, tenant, treeId, ["ended", "", jobId, 0, root ? endedTtl : ttl]);
    },

    async wait(tenant, treeId, eventId, jobId, kind, ts): Promise<WaitAnswer> {
      const r = await call(limitsJobEvent, tenant, treeId, [kind === "started" ? "wait_started" : "wait_ended", eventId, jobId, ts, ttl]);
      return { waited: at(r, 0), over: at(r, 1) === 1 };
    },

    putBudgetRequest: (r) =>
      redisCall(`keeping budget request ${r.approval} of tree ${r.tree_id}`, keys.limits(r.tenant, r.tree_id), async () => {
        await redis.hsetnx(keys.limits(r.tenant, r.tree_id), `breq:${r.approval}`, JSON.stringify(r));
        await redis.set(keys.budgetRequest(r.approval), `${r.tenant}\n${r.tree_id}`, "EX", ttl, "NX");
        await redis.zadd(keys.budgetRequests(), "NX", r.asked_at, indexMember(r));
      }),

    budgetRequests: () =>
      redisCall("reading the budget requests", keys.budgetRequests(), async () => {
        const members = await redis.zrange(keys.budgetRequests(), 0, -1);
        // One read a tree, all at once (the trees' keys sit in slots of their own).
        const read = await Promise.all(
          members.map((member) => {
            const [tenant = "", tree = "", approval = ""] = member.split("\n");
            return redis.hmget(keys.limits(tenant, tree), `breq:${approval}`, `bans:${approval}`);
          }),
        );
        const out: BudgetRequest[] = [];
        const gone: string[] = [];
        read.forEach(([request, answer], i) => {
          // Answered, or expired with its tree: it waits no more.
          if (request == null || answer != null) gone.push(members[i] as string);
          else out.push(JSON.parse(request) as BudgetRequest);
        });
        if (gone.length > 0) await redis.zrem(keys.budgetRequests(), ...gone);
        return out;
      }),

    budgetRequest: (approval) =>
      redisCall(`reading budget request ${approval}`, keys.budgetRequest(approval), async () => {
        const where = await redis.get(keys.budgetRequest(approval));
        if (where === null) return null;
        const [tenant = "", tree = ""] = where.split("\n");
        const [request, answer, budget] = await redis.hmget(keys.limits(tenant, tree), `breq:${approval}`, `bans:${approval}`, "s:budget");
        if (request == null) return null;
        return { request: JSON.parse(request) as BudgetRequest, answered: answer == null ? null : (JSON.parse(answer) as BudgetAnswer), treeBudget: budget == null ? -1 : Number(budget) };
      }),

    answerBudgetRequest: (r, a) =>
      redisCall(`answering budget request ${r.approval}`, keys.limits(r.tenant, r.tree_id), async () => {
        const held = await limitsBudgetAnswer.run(redis, keys, { request: r, answer: a, ttl });
        if (held === null) throw new Error(`tree ${r.tree_id} keeps no budget request ${r.approval}: it expired with the tree's state`);
        await redis.zrem(keys.budgetRequests(), indexMember(r));
        return held;
      }),

    spent: (tenant, treeId) =>
      redisCall(`reading the spend of tree ${treeId}`, keys.limits(tenant, treeId), async () => {
        const [auth, spent] = await redis.hmget(keys.limits(tenant, treeId), "s:auth", "spent");
        return auth === null ? null : Number(spent ?? 0);
      }),
  };
}

/** Seconds an ending lives in a hash that has no TTL yet (a tree whose state it creates). */
const ENDING_TTL_SECONDS = 7 * 24 * 3600;

/** Keeps a job's ending once (the first one wins): true when this call kept it. */
export const jobEnding = defineScript({
  name: "jobEnding",
  keys: (k, e: EndingRecord) => [k.limits(e.tenant, e.tree)],
  args: (e) => [e.job, JSON.stringify(e.ending), ENDING_TTL_SECONDS],
  reply: flag,
  what: (e) => `keeping how job ${e.job} of tree ${e.tree} ended`,
});

export function redisStandingStore(redis: RedisClient, keys: Keys): StandingStore {
  return {
    async read(jobs) {
      return Promise.all(
        jobs.map(async ({ tenant, tree, job }) => {
          const key = keys.limits(tenant, tree);
          try {
            return await redis.hmget(key, ...standingFields(job));
          } catch (err) {
            throw redisFailure(err, `reading how job ${job} of tree ${tree} stands`, key);
          }
        }),
      );
    },
    async record(endings) {
      await Promise.all(endings.map((e) => jobEnding.run(redis, keys, e)));
    },
  };
}

/** A request is kept this long past its deadline, so its answer is still read. */
const KEPT_PAST_DEADLINE_SECONDS = 7 * 24 * 3600;

/** Keeps an unknown outcome's request and puts it in the index of those waiting, by deadline. */
export const unknownOutcomePut = defineScript({
  name: "unknownOutcomePut",
  keys: (k, i: { readonly request: UnknownOutcomeRequest; readonly ttl: number }) => [k.unknownOutcome(i.request.approval), k.unknownOutcomes()],
  args: (i) => [JSON.stringify(i.request), i.request.deadline, i.request.approval, i.ttl],
  reply: ignored,
  what: (i) => `keeping unknown outcome ${i.request.approval} of job ${i.request.job_id}`,
});

/** Answers an unknown outcome once: the answer that holds, or null when no such request is kept. */
export const unknownOutcomeAnswer = defineScript({
  name: "unknownOutcomeAnswer",
  keys: (k, i: { readonly approval: string; readonly answer: UnknownOutcomeAnswer; readonly leave: boolean }) => [k.unknownOutcome(i.approval), k.unknownOutcomes()],
  args: (i) => [i.approval, JSON.stringify(i.answer), i.leave ? 1 : 0],
  reply: (raw, fail) => {
    if (typeof raw !== "string") fail('the answer (JSON) or ""');
    return raw === "" ? null : (JSON.parse(raw as string) as UnknownOutcomeAnswer);
  },
  what: (i) => `answering unknown outcome ${i.approval}`,
});

export function redisUnknownOutcomeStore(redis: RedisClient, keys: Keys): UnknownOutcomeStore {
  const parse = (text: string | null | undefined): UnknownOutcomeRequest | null => (text ? (JSON.parse(text) as UnknownOutcomeRequest) : null);
  const requests = async (approvals: readonly string[]): Promise<UnknownOutcomeRequest[]> => {
    const read = await Promise.all(approvals.map((a) => redis.hmget(keys.unknownOutcome(a), "request", "answer")));
    const out: UnknownOutcomeRequest[] = [];
    const gone: string[] = [];
    read.forEach(([request, answer], i) => {
      const r = parse(request);
      // Expired: it waits no more. Answered by the timer, it stays in the index until its
      // decision is published (`done`), so a listing never takes it out before then.
      if (!r) gone.push(approvals[i] as string);
      else if (!answer) out.push(r);
    });
    if (gone.length > 0) await redis.zrem(keys.unknownOutcomes(), ...gone);
    return out;
  };
  return {
    put: (r, now) =>
      unknownOutcomePut.run(redis, keys, { request: r, ttl: Math.max(1, Math.ceil((r.deadline - now) / 1000)) + KEPT_PAST_DEADLINE_SECONDS }),
    waiting: () => redisCall("reading the unknown outcomes waiting", keys.unknownOutcomes(), async () => requests(await redis.zrange(keys.unknownOutcomes(), 0, -1))),
    due: (now, limit) =>
      redisCall("reading the unknown outcomes past their deadline", keys.unknownOutcomes(), async () => {
        const approvals = await redis.zrangebyscore(keys.unknownOutcomes(), "-inf", now, "LIMIT", 0, limit);
        const read = await Promise.all(approvals.map((a) => redis.hmget(keys.unknownOutcome(a), "request", "answer")));
        const out: Array<{ request: UnknownOutcomeRequest; answered: UnknownOutcomeAnswer | null }> = [];
        const gone: string[] = [];
        read.forEach(([request, answer], i) => {
          const r = parse(request);
          if (r) out.push({ request: r, answered: answer ? (JSON.parse(answer) as UnknownOutcomeAnswer) : null });
          else gone.push(approvals[i] as string);
        });
        if (gone.length > 0) await redis.zrem(keys.unknownOutcomes(), ...gone);
        return out;
      }),
    get: (approval) =>
      redisCall(`reading unknown outcome ${approval}`, keys.unknownOutcome(approval), async () => {
        const [request, answer] = await redis.hmget(keys.unknownOutcome(approval), "request", "answer");
        const r = parse(request);
        return r ? { request: r, answered: answer ? (JSON.parse(answer) as UnknownOutcomeAnswer) : null } : null;
      }),
    answer: (approval, a, leave) =>
      unknownOutcomeAnswer.run(redis, keys, { approval, answer: a, leave }),
    done: (approval) => redisCall(`taking unknown outcome ${approval} out of those waiting`, keys.unknownOutcomes(), async () => void (await redis.zrem(keys.unknownOutcomes(), approval))),
  };
}
