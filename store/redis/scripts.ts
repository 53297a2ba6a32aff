/**
 * Lua scripts, one per file in `lua/`, named `<name>-<number of keys>.lua`, each opening with a
 * header of its KEYS, ARGV and return codes. A line `--@include <name>` takes in
 * `lua/includes/<name>.lua` (and what it includes), for helpers several scripts share.
 *
 * A call goes by the digest of the script's text (EVALSHA), so a deploy never runs a stale script,
 * and the text itself is sent only where the server lacks it: a script run alone is sent again
 * with its text on a NOSCRIPT reply (`runScript`), and in a pipeline the first call of a script on
 * a socket is an EVAL, which loads it there (`ScriptCall`). The scripts are not defined on the connection
 * (ioredis's `defineCommand` copies every defined script onto every pipeline it makes, one a tick
 * with auto-pipelining), so a pipeline costs the same however many scripts there are.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { Command } from "ioredis";
import type { RedisClient } from "./client.ts";
import { hashTag } from "./slots.ts";

export interface ScriptFile {
  readonly name: string;
  readonly keys: number;
  readonly lua: string;
  /** The SHA-1 of the text: what EVALSHA names it by. */
  readonly sha: string;
}

const dir = new URL("./lua/", import.meta.url);

export function scriptFiles(): ScriptFile[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".lua"))
    .sort()
    .map((file) => {
      const m = /^([A-Za-z]+)-(\d+)\.lua$/.exec(file);
      if (!m) throw new Error(`Lua script ${file} must be named <name>-<number of keys>.lua`);
      const source = readFileSync(new URL(file, dir), "utf8");
      if (!source.startsWith("--[[")) throw new Error(`Lua script ${file} must open with a --[[ header ]] naming its KEYS, ARGV and returns`);
      const lua = withIncludes(file, source, []);
      return { name: m[1] as string, keys: Number(m[2]), lua, sha: createHash("sha1").update(lua).digest("hex") };
    });
}

/** The text with each `--@include <name>` line replaced by that include, whose own includes are taken in too. */
function withIncludes(file: string, text: string, within: readonly string[]): string {
  return text.replace(/^--@include ([A-Za-z]+)[ \t]*$/gm, (_line, name: string) => {
    if (within.includes(name)) throw new Error(`Lua script ${file} includes ${name} within itself (${[...within, name].join(" > ")})`);
    let included: string;
    try {
      included = readFileSync(new URL(`includes/${name}.lua`, dir), "utf8");
    } catch (err) {
      throw new Error(`Lua script ${file} includes ${name}, which store/redis/lua/includes/${name}.lua does not hold`, { cause: err });
    }
    return withIncludes(file, included, [...within, name]);
  });
}

let loaded: Map<string, ScriptFile> | undefined;

/** The scripts by name, read from disk once per process. */
export function scripts(): Map<string, ScriptFile> {
  loaded ??= new Map(scriptFiles().map((s) => [s.name, s]));
  return loaded;
}

/** A server's answer that it does not hold the script (by digest): nothing ran. */
function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith("NOSCRIPT");
}

/** The sockets each script's text has gone out on, by the script's SHA-1. */
const sentOn = new Map<string, WeakSet<object>>();

/**
 * One call of a script: EVAL with its text the first time on a socket, EVALSHA with its digest
 * after. A NOSCRIPT reply (the server lost its scripts: a restart, a failover, SCRIPT FLUSH)
 * forgets the socket, so the call sent again carries the text.
 */
class ScriptCall extends Command {
  private readonly file: ScriptFile;

  constructor(file: ScriptFile, keysAndArgs: ReadonlyArray<string | number>) {
    super("evalsha", [file.sha, file.keys, ...keysAndArgs], { replyEncoding: "utf8" });
    this.file = file;
  }

  override toWritable(socket: object): string | Buffer {
    let sent = sentOn.get(this.file.sha);
    if (!sent) sentOn.set(this.file.sha, (sent = new WeakSet()));
    const known = sent.has(socket);
    sent.add(socket);
    this.name = known ? "evalsha" : "eval";
    this.args[0] = known ? this.file.sha : this.file.lua;
    const reject = this.reject;
    this.reject = (err: Error) => {
      if (isNoScript(err)) sent.delete(socket);
      reject.call(this, err);
    };
    return super.toWritable(socket);
  }
}

/** The script of this name, checked against the keys it is given. */
export function scriptFor(name: string, keys: readonly string[]): ScriptFile {
  const s = scripts().get(name);
  if (!s) throw new Error(`no Lua script named ${name} in store/redis/lua`);
  if (keys.length !== s.keys) throw new Error(`script ${name} takes ${s.keys} keys, got ${keys.length}`);
  // Redis Cluster runs a script only when its keys share a slot; one node would run it, and the code would break on a cluster.
  if (new Set(keys.map(hashTag)).size > 1) throw new Error(`script ${name} was given keys of several hash tags (${keys.join(", ")}): a script's keys must share one, so they share a slot on Redis Cluster`);
  return s;
}

/** A call of the script with its keys, then its arguments, to send in a pipeline (`sendCommand`). */
export function scriptCall(file: ScriptFile, keysAndArgs: ReadonlyArray<string | number>): Command {
  return new ScriptCall(file, keysAndArgs);
}

/** A script's call by name, as ioredis's typed commands take it on a node and on a cluster alike. */
type Call = (script: string, numberOfKeys: number, ...keysAndArgs: Array<string | number>) => Promise<unknown>;

/**
 * Runs a script by its name (`tallyOnce`): EVALSHA, sent as one of ioredis's commands, so that
 * auto-pipelining writes it with whatever else goes out in the same tick; EVAL with its text when
 * the server does not have it yet (its script cache is the server's, so that is once a server,
 * and again after a restart, a failover or SCRIPT FLUSH).
 */
export async function runScript(redis: RedisClient, name: string, keys: string[], args: Array<string | number>): Promise<unknown> {
  const s = scriptFor(name, keys);
  const calls = redis as unknown as { evalsha: Call; eval: Call };
  try {
    return await calls.evalsha(s.sha, s.keys, ...keys, ...args);
  } catch (err) {
    if (!isNoScript(err)) throw err;
    return calls.eval(s.lua, s.keys, ...keys, ...args);
  }
}
