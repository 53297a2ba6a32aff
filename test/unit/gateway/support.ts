import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const DIR = fileURLToPath(new URL("../../fixtures/gateway/", import.meta.url));

/** A fixture's text (test/fixtures/gateway/). */
export function fixtureText(name: string): string {
  return readFileSync(DIR + name, "utf8");
}

/** A fixture parsed as JSON; a fresh copy each time. */
export function fixtureJson(name: string): Record<string, unknown> {
  return JSON.parse(fixtureText(name)) as Record<string, unknown>;
}
