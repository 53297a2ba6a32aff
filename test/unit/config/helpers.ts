import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import type { ConfigError, Parsed } from "../../../config/errors.ts";

/** The example configuration shipped in config/examples. */
export const EXAMPLES = fileURLToPath(new URL("../../../config/examples", import.meta.url));
export const FIXTURES = fileURLToPath(new URL("./fixtures", import.meta.url));

export function example(relative: string): string {
  return readFileSync(`${EXAMPLES}/${relative}`, "utf8");
}

export function valueOf<T>(parsed: Parsed<T>): T {
  if (!parsed.ok) throw new Error(`expected no errors, got:\n${parsed.errors.map((e) => e.message).join("\n")}`);
  return parsed.value;
}

export function errorsOf<T>(parsed: Parsed<T>): readonly ConfigError[] {
  if (parsed.ok) throw new Error(`expected errors, got a value: ${JSON.stringify(parsed.value)}`);
  return parsed.errors;
}

/** The one error about `field`, checked for its file, line and a part of its reason. */
export function expectError(errors: readonly ConfigError[], want: { path: string; field: string; line?: number; reason: string | RegExp }): ConfigError {
  const about = errors.filter((e) => e.field === want.field);
  expect(about.map((e) => e.message), `errors about ${want.field} among:\n${errors.map((e) => e.message).join("\n")}`).toHaveLength(1);
  const error = about[0]!;
  expect(error.path).toBe(want.path);
  if (want.line !== undefined) expect(error.line).toBe(want.line);
  if (typeof want.reason === "string") expect(error.reason).toContain(want.reason);
  else expect(error.reason).toMatch(want.reason);
  return error;
}
