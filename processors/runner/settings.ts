/**
 * Whole-number settings read from the environment, each with its default and its range: unset
 * or blank gives the default; anything else outside the range (or not a whole number) stops the
 * processor at start with the setting's name, its value and what it may be.
 */
export type Env = Record<string, string | undefined>;

export function wholeFromEnv(env: Env, name: string, fallback: number, min: number, max: number, unit = ""): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name}=${raw} is not a whole number${unit ? ` of ${unit}` : ""} from ${min} to ${max}`);
  return n;
}
