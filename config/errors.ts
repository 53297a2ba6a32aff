/**
 * What went wrong in a configuration file, and where. Every parser collects all of a file's
 * errors before it answers, so one run of `oz0 config` shows everything to fix.
 */
import { Oz0Error } from "../lib/errors.ts";

/** Where and why, as plain data: the shape both errors and warnings share. */
export interface ConfigIssue {
  /** The file, as the caller named it (or a record key such as `tenant/acme` for a change). */
  readonly path: string;
  /** Dotted path of the field, lists by index: `limits.tree.fan_out`, `tools[0].mcp`; empty for the whole file. */
  readonly field: string;
  /** 1-based line in the file, when known. */
  readonly line: number | undefined;
  /** What is wrong and what would be right, as a sentence fragment. */
  readonly reason: string;
}

/** `path:line: field: reason`, leaving out the line when it is not known and the field when it is the whole file. */
export function formatConfigIssue(issue: Omit<ConfigIssue, "line"> & { readonly line?: number | undefined }): string {
  const where = issue.line === undefined ? issue.path : `${issue.path}:${issue.line}`;
  return issue.field === "" ? `${where}: ${issue.reason}` : `${where}: ${issue.field}: ${issue.reason}`;
}

/** A configuration that cannot be used as written. Never retriable: the file has to change. */
export class ConfigError extends Oz0Error implements ConfigIssue {
  override readonly name = "ConfigError";
  readonly path: string;
  readonly field: string;
  readonly line: number | undefined;
  readonly reason: string;

  constructor(issue: Omit<ConfigIssue, "line"> & { readonly line?: number | undefined }) {
    super(formatConfigIssue(issue));
    this.path = issue.path;
    this.field = issue.field;
    this.line = issue.line;
    this.reason = issue.reason;
  }
}

/** Something that works as written but is probably not what was meant (a manifest lint, FIT-17). */
export interface ConfigWarning extends ConfigIssue {
  /** Formatted as a ConfigError's message is. */
  readonly message: string;
}

export function configWarning(issue: Omit<ConfigIssue, "line"> & { readonly line?: number | undefined }): ConfigWarning {
  return { path: issue.path, field: issue.field, line: issue.line, reason: issue.reason, message: formatConfigIssue(issue) };
}

/**
 * What a parser answers: the value when the file is valid, else every error found in it.
 * Warnings come either way.
 */
export type Parsed<T> =
  | { readonly ok: true; readonly value: T; readonly warnings: readonly ConfigWarning[] }
  | { readonly ok: false; readonly errors: readonly ConfigError[]; readonly warnings: readonly ConfigWarning[] };
