/** A call's arguments, as every event that carries them holds them: JSON object text. */

/** The arguments as an object, or why they are not one (a reason a person can act on). */
export function parseArguments(text: string): Record<string, unknown> | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return `arguments are not JSON (${(err as Error).message}): publish the call's arguments as a JSON object`;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return "arguments must be a JSON object";
  return value as Record<string, unknown>;
}
