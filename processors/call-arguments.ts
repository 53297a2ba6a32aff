/** A call's arguments, as every event that carries them holds them: JSON object text. */

/**
 * The largest arguments a call may carry, in UTF-8 bytes. Large data travels as files (FILE-1),
 * named in the arguments by ref; arguments above this are refused before they are parsed, so
 * no decision, trace entry or evidence can grow with them.
 */
export const MAX_ARGUMENTS_BYTES = 512 * 1024;

/**
 * The deepest nesting of objects and arrays arguments may have. Every processor walks
 * arguments recursively (canonical JSON for loop digests, fitting, file refs), so deeper
 * nesting is refused before JSON.parse, by a linear scan, rather than overflowing a stack.
 */
export const MAX_ARGUMENTS_DEPTH = 64;

/**
 * How deep the JSON text nests objects and arrays, scanning at most until `limit` is passed
 * (strings skipped, escapes honoured). Not a validator: JSON.parse still judges the syntax.
 */
export function jsonNestingDepth(text: string, limit = Infinity): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}

/** Why arguments are too big or too deep to parse, or null when they may be parsed. */
export function argumentsTooLarge(text: string): string | null {
  // A UTF-16 unit is at most 3 UTF-8 bytes: the exact count is needed only near the limit.
  if (text.length * 3 > MAX_ARGUMENTS_BYTES) {
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes > MAX_ARGUMENTS_BYTES) {
      return `arguments are ${bytes} bytes, above the limit of ${MAX_ARGUMENTS_BYTES} (512 KiB): store large data as a file and pass its ref in the arguments`;
    }
  }
  const depth = jsonNestingDepth(text, MAX_ARGUMENTS_DEPTH);
  if (depth > MAX_ARGUMENTS_DEPTH) {
    return `arguments nest objects and arrays more than ${MAX_ARGUMENTS_DEPTH} levels deep: flatten them, or store the data as a file and pass its ref`;
  }
  return null;
}

/** The arguments as an object, or why they are not one (a reason a person can act on). */
export function parseArguments(text: string): Record<string, unknown> | string {
  const refused = argumentsTooLarge(text);
  if (refused !== null) return refused;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return `arguments are not JSON (${(err as Error).message}): publish the call's arguments as a JSON object`;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return "arguments must be a JSON object: publish the call's arguments as one, such as {} for none";
  return value as Record<string, unknown>;
}
