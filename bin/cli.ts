/**
 * What every `oz0` subcommand shares: how it ends (`Exit`: 0 done, 1 what was asked is not so,
 * 2 usage), its argument parsing with the subcommand's help on a usage error, and who is
 * answering or changing something (`--as`, else `OZ0_OPERATOR`, else the login name).
 */
import { userInfo } from "node:os";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { personProcessor } from "../processors/loops/waiting.ts";
import { Oz0Error } from "../lib/errors.ts";

/** What a subcommand says and how it ends. */
export class Exit extends Oz0Error {
  readonly code: 0 | 1 | 2;
  /** Where the message goes: the command's output (a report, --json), or what went wrong. */
  readonly to: "stdout" | "stderr";
  constructor(code: 0 | 1 | 2, message: string, to: "stdout" | "stderr" = "stderr") {
    super(message);
    this.code = code;
    this.to = to;
  }
}

export const usage = (text: string): Exit => new Exit(2, text);

/** The subcommand's arguments; a usage error shows `help`. */
export function parse<O extends NonNullable<ParseArgsConfig["options"]>>(help: string, args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw usage(`${err instanceof Error ? err.message : String(err)}\n\n${help}`);
  }
}

/** Who acts: `--as`, else `OZ0_OPERATOR`, else the login name; checked as an answer carries it. */
export function person(given: string | undefined): string {
  const name = given ?? process.env.OZ0_OPERATOR ?? userInfo().username;
  try {
    personProcessor(name);
  } catch (err) {
    throw usage(`${err instanceof Error ? err.message : String(err)} (--as NAME)\n`);
  }
  return name.trim();
}
