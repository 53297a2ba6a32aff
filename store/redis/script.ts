/**
 * The typed boundary to the Lua scripts of `lua/`: one descriptor per script says which keys it
 * takes, which arguments, what its reply means, and what a failure of it is called. `run` is the
 * one place a script's Redis failure becomes a TransientError or a StoreRefused
 * (`errors.ts`, by what the server said) and its reply is decoded into a typed value; a reply of
 * another shape throws a ScriptReplyError naming the script.
 */
import { Oz0Error } from "../../lib/errors.ts";
import type { RedisClient } from "./client.ts";
import { redisFailure } from "./errors.ts";
import type { Keys } from "./keys.ts";
import { runScript, scriptCall, scriptFor } from "./scripts.ts";
import type { SlotCommand } from "./slots.ts";

/** A script answered something its descriptor does not read: the script and the code disagree. Never retriable. */
export class ScriptReplyError extends Oz0Error {
  readonly script: string;
  constructor(script: string, reply: unknown, expected: string) {
    super(`Lua script ${script} answered ${shown(reply)}, not ${expected}: the script and its descriptor disagree`, { retriable: false });
    this.name = "ScriptReplyError";
    this.script = script;
  }
}

function shown(reply: unknown): string {
  try {
    return JSON.stringify(reply) ?? String(reply);
  } catch {
    return String(reply);
  }
}

/** Reads a raw reply; `fail(expected)` throws the ScriptReplyError naming the script. */
export type ReplyDecoder<Out> = (raw: unknown, fail: (expected: string) => never) => Out;

export interface ScriptSpec<In, Out> {
  /** The script's name: `lua/<name>-<number of keys>.lua`. */
  readonly name: string;
  /** Its KEYS, in order; all share one hash tag. */
  readonly keys: (k: Keys, input: In) => string[];
  /** Its ARGV, in order. */
  readonly args: (input: In) => Array<string | number>;
  /** Its reply, read in this one place (with the input it answers). */
  readonly reply: (raw: unknown, fail: (expected: string) => never, input: In) => Out;
  /** What a failure calls the step: "running limitsAdmitCall for tree T". @default "running <name>" */
  readonly what?: (input: In) => string;
  /** The key a failure names. @default the first of `keys` */
  readonly key?: (k: Keys, input: In) => string;
}

export interface Script<In, Out> extends Required<ScriptSpec<In, Out>> {
  /**
   * Runs the script; a Redis failure is thrown as a TransientError or a StoreRefused, a reply of
   * another shape as a ScriptReplyError. `within` names the larger step the script is a part of,
   * when its failure should be called that step's (`what`, `key`) instead of the script's own.
   */
  run(redis: RedisClient, k: Keys, input: In, within?: { readonly what: string; readonly key: string }): Promise<Out>;
  /** The reply decoded, or a ScriptReplyError naming the script. */
  decode(raw: unknown, input?: In): Out;
  /**
   * The script as one command of a slot pipeline (`execBySlot`), for a store that sends it beside
   * other commands and classifies the pipeline's replies itself; `decode` reads its reply.
   */
  command(k: Keys, input: In): SlotCommand;
}

export function defineScript<In, Out>(spec: ScriptSpec<In, Out>): Script<In, Out> {
  const what = spec.what ?? (() => `running ${spec.name}`);
  const errorKey = spec.key ?? ((k: Keys, input: In) => spec.keys(k, input)[0] ?? "");
  const decode = (raw: unknown, input?: In): Out =>
    spec.reply(
      raw,
      (expected) => {
        throw new ScriptReplyError(spec.name, raw, expected);
      },
      input as In,
    );
  return {
    ...spec,
    what,
    key: errorKey,
    decode,
    command(k, input) {
      const keys = spec.keys(k, input);
      const file = scriptFor(spec.name, keys);
      const keysAndArgs = [...keys, ...spec.args(input)];
      return { key: keys[0] ?? "", name: "evalsha", args: [file.sha, file.keys, ...keysAndArgs], build: () => scriptCall(file, keysAndArgs) };
    },
    async run(redis, k, input, within) {
      let raw: unknown;
      try {
        raw = await runScript(redis, spec.name, spec.keys(k, input), spec.args(input));
      } catch (err) {
        throw within ? redisFailure(err, within.what, within.key) : redisFailure(err, what(input), errorKey(k, input));
      }
      return decode(raw, input);
    },
  };
}

// Decoders of the reply shapes the scripts share.

/** A reply of integers, of any length. */
export const integers: ReplyDecoder<number[]> = (raw, fail) => {
  if (!Array.isArray(raw) || raw.some((v) => typeof v !== "number")) fail("a list of integers");
  return raw as number[];
};

/** One integer. */
export const integer: ReplyDecoder<number> = (raw, fail) => {
  if (typeof raw !== "number") fail("an integer");
  return raw as number;
};

/** 1 or 0, as true or false. */
export const flag: ReplyDecoder<boolean> = (raw, fail) => {
  if (raw !== 0 && raw !== 1) fail("1 or 0");
  return raw === 1;
};

/** One string (a bulk reply). */
export const text: ReplyDecoder<string> = (raw, fail) => {
  if (typeof raw !== "string") fail("a string");
  return raw as string;
};

/** A list of strings. */
export const texts: ReplyDecoder<string[]> = (raw, fail) => {
  if (!Array.isArray(raw) || raw.some((v) => typeof v !== "string")) fail("a list of strings");
  return raw as string[];
};

/** Whatever the script answers, unread (a script whose reply means nothing). */
export const ignored: ReplyDecoder<void> = () => undefined;
