/**
 * A kill switch's change as the loops see it (LOOP-9): what throwing or releasing one came to,
 * and the words the command prints for it. The switch itself is a row of the configuration
 * table (`config/kill-switch.ts`), which loop-calls reads; `bin/kill-switch.ts` writes it.
 */
import { killSwitchId, type KillSwitch } from "../../config/kill-switch.ts";

export type KillSwitchOutcome =
  | { readonly changed: "thrown"; readonly sw: KillSwitch }
  | { readonly changed: "released"; readonly was: KillSwitch }
  | { readonly changed: "none"; readonly why: string }
  | { readonly error: string };

/** What the command prints for an outcome. */
export function describeKillSwitch(o: KillSwitchOutcome): string {
  if ("error" in o) return `error: ${o.error}`;
  if (o.changed === "none") return `nothing changed: ${o.why}`;
  if (o.changed === "released") return `released  kill switch on ${killSwitchId(o.was.plugin, o.was.tool)} (thrown ${new Date(o.was.at).toISOString()} by ${o.was.by}); its calls go ahead again`;
  return `thrown    kill switch on ${killSwitchId(o.sw.plugin, o.sw.tool)}: every call of it, in every tenant, is refused: ${o.sw.reason}`;
}
