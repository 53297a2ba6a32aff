/**
 * Lua scripts, one per file in `lua/`, named `<name>-<number of keys>.lua`, each opening with a
 * header of its KEYS, ARGV and return codes. A line `--@include <name>` takes in
 * `lua/includes/<name>.lua` (and what it includes), for helpers several scripts share. They are loaded once per connection under a name
 * that carries a digest of their text, so a deploy never runs a stale script.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import type { RedisClient } from "./client.ts";
import { hashTag } from "./slots.ts";

export interface ScriptFile {
  readonly name: string;
  readonly keys: number;
  readonly lua: string;
  /** The command name it is defined under: name and a digest of the text. */
  readonly command: string;
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
      const digest = createHash("sha1").update(lua).digest("hex").slice(0, 8);
      return { name: m[1] as string, keys: Number(m[2]), lua, command: `oz0_${m[1] as string}_${digest}` };
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

const defined = new WeakSet<RedisClient>();

/** Defines every script on a connection once; later calls on the same connection do nothing. */
export function defineScripts(redis: RedisClient): void {
  if (defined.has(redis)) return;
  for (const s of scripts().values()) redis.defineCommand(s.command, { numberOfKeys: s.keys, lua: s.lua });
  defined.add(redis);
}

/** Runs a script by its name (`tallyOnce`), defining the scripts on this connection first. */
export async function runScript(redis: RedisClient, name: string, keys: string[], args: Array<string | number>): Promise<unknown> {
  defineScripts(redis);
  const s = scripts().get(name);
  if (!s) throw new Error(`no Lua script named ${name} in store/redis/lua`);
  if (keys.length !== s.keys) throw new Error(`script ${name} takes ${s.keys} keys, got ${keys.length}`);
  // Redis Cluster runs a script only when its keys share a slot; one node would run it, and the code would break on a cluster.
  if (new Set(keys.map(hashTag)).size > 1) throw new Error(`script ${name} was given keys of several hash tags (${keys.join(", ")}): a script's keys must share one, so they share a slot on Redis Cluster`);
  const fn = (redis as unknown as Record<string, (...a: Array<string | number>) => Promise<unknown>>)[s.command];
  if (!fn) throw new Error(`script ${name} is not defined on this connection`);
  return fn.call(redis, ...keys, ...args);
}
