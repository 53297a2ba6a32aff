/**
 * A YAML file read for validation: the parsed tree with line numbers, and the errors found so
 * far. Readers walk it through `Value`s, each knowing its dotted field path and line, report
 * problems with `fail`, and carry on, so one pass finds every error in the file.
 */
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node as YamlNode } from "yaml";
import { ConfigError, type ConfigWarning, type Parsed } from "./errors.ts";
import { closest } from "./suggest.ts";

export class YamlFile {
  readonly path: string;
  readonly errors: ConfigError[] = [];
  readonly #doc: Document.Parsed;
  readonly #lines = new LineCounter();
  readonly #fieldLines = new Map<string, number>();

  constructor(path: string, text: string) {
    this.path = path;
    this.#doc = parseDocument(text, { lineCounter: this.#lines, prettyErrors: true, uniqueKeys: true });
    for (const e of this.#doc.errors) {
      this.errors.push(new ConfigError({ path, field: "", line: e.linePos?.[0].line, reason: yamlReason(e.message) }));
    }
  }

  /** True when the text is valid YAML; field errors are not worth reading on a broken tree. */
  get syntaxOk(): boolean {
    return this.#doc.errors.length === 0;
  }

  /** The document's top value. An empty file is an absent value at line 1. */
  root(): Value {
    return new Value(this, "", this.#doc.contents ?? undefined, undefined, 1);
  }

  lineOf(node: YamlNode | undefined): number | undefined {
    const offset = node?.range?.[0];
    return offset === undefined ? undefined : this.#lines.linePos(offset).line;
  }

  /** The line a field was read from, for checks made after reading (lint, cross-field rules). */
  lineOfField(field: string): number | undefined {
    return this.#fieldLines.get(field);
  }

  noteField(field: string, line: number | undefined): void {
    if (line !== undefined && !this.#fieldLines.has(field)) this.#fieldLines.set(field, line);
  }

  fail(field: string, line: number | undefined, reason: string): undefined {
    this.errors.push(new ConfigError({ path: this.path, field, line, reason }));
    return undefined;
  }

  /** The parser's answer: the value when no error was found, else the errors in the order of the file. */
  finish<T>(value: T, warnings: readonly ConfigWarning[] = []): Parsed<T> {
    return this.errors.length === 0 ? { ok: true, value, warnings } : this.failed(warnings);
  }

  /** The errors found, in the order of the file: for a parser that cannot go on. */
  failed(warnings: readonly ConfigWarning[] = []): Parsed<never> {
    const errors = this.errors.map((error, i) => ({ error, i }));
    errors.sort((a, b) => (a.error.line ?? 0) - (b.error.line ?? 0) || a.i - b.i);
    return { ok: false, errors: errors.map((e) => e.error), warnings };
  }

  resolve(node: YamlNode | undefined): YamlNode | undefined {
    if (node !== undefined && isAlias(node)) return node.resolve(this.#doc) ?? undefined;
    return node;
  }

  toJS(node: YamlNode): unknown {
    return node.toJS(this.#doc);
  }
}

/** yaml's first line, without the position it repeats ("... at line 2, column 1:"). */
function yamlReason(message: string): string {
  const first = message.split("\n", 1)[0] ?? message;
  return first.replace(/ at line \d+, column \d+:?$/, "");
}

/** Where a key that belongs elsewhere does belong, for a better "unknown key" error. */
export type KeyHints = Readonly<Record<string, string>>;

/** One value of the file at one field path; possibly absent. */
export class Value {
  readonly file: YamlFile;
  readonly field: string;
  readonly node: YamlNode | undefined;
  readonly #keyLine: number | undefined;
  readonly #parentLine: number | undefined;

  /**
   * @param keyLine the line of the key the value is under, where errors about it point
   * @param parentLine where errors point when the value was left out
   */
  constructor(file: YamlFile, field: string, node: YamlNode | undefined, keyLine: number | undefined, parentLine: number | undefined) {
    this.file = file;
    this.field = field;
    this.node = file.resolve(node);
    this.#keyLine = keyLine;
    this.#parentLine = parentLine;
    file.noteField(field, this.line);
  }

  /** The line of the value's key, else of the value (a list item), else of its parent when it was left out. */
  get line(): number | undefined {
    return this.#keyLine ?? this.file.lineOf(this.node) ?? this.#parentLine;
  }

  /** Left out, or written with nothing after the colon (`key:`, `key: ~`): both take the default. */
  get absent(): boolean {
    return this.node === undefined || (isScalar(this.node) && this.node.value === null);
  }

  /** The scalar's value (text, number, boolean), or undefined for mappings and lists. */
  get scalar(): unknown {
    return this.node !== undefined && isScalar(this.node) ? this.node.value : undefined;
  }

  get isMapping(): boolean {
    return this.node !== undefined && isMap(this.node);
  }

  get isList(): boolean {
    return this.node !== undefined && isSeq(this.node);
  }

  fail(reason: string): undefined {
    return this.file.fail(this.field, this.line, reason);
  }

  /** How the value reads in an error: `the text "x"`, `the number 5`, `a list`. */
  describe(): string {
    const node = this.node;
    if (node === undefined) return "nothing";
    if (isMap(node)) return "a mapping";
    if (isSeq(node)) return "a list";
    const v = this.scalar;
    if (typeof v === "string") return `the text "${v}"`;
    if (typeof v === "number") return `the number ${v}`;
    if (typeof v === "boolean") return String(v);
    return "nothing";
  }

  /**
   * The value as a mapping with only the given keys. Reports a value that is not a mapping and
   * every key that is not allowed (with a did-you-mean, or where the key belongs).
   */
  mapping(allowed: readonly string[], hints: KeyHints = {}): Fields | undefined {
    if (this.absent) return new Fields(this, new Map());
    const node = this.node;
    if (node === undefined || !isMap(node)) return this.fail(`expected a mapping of ${allowed.join(", ")}; got ${this.describe()}`);
    const entries = new Map<string, { node: YamlNode | undefined; line: number | undefined }>();
    for (const pair of node.items) {
      const keyNode = pair.key as YamlNode | null;
      const keyLine = this.file.lineOf(keyNode ?? undefined) ?? this.line;
      const key = keyNode !== null && isScalar(keyNode) ? keyNode.value : undefined;
      if (typeof key !== "string") {
        this.file.fail(this.field, keyLine, `keys are names such as ${allowed[0] ?? "name"}; got a key that is not text`);
        continue;
      }
      const field = join(this.field, key);
      if (!allowed.includes(key)) {
        this.file.fail(field, keyLine, unknownKey(key, allowed, hints, this.field));
        continue;
      }
      entries.set(key, { node: (pair.value as YamlNode | null) ?? undefined, line: keyLine });
    }
    return new Fields(this, entries);
  }

  /** The value's items, or an empty list when absent. Reports a value that is not a list. */
  list(what: string): Value[] | undefined {
    if (this.absent) return [];
    const node = this.node;
    if (node === undefined || !isSeq(node)) return this.fail(`expected a list of ${what}; got ${this.describe()}`);
    return node.items.map((item, i) => new Value(this.file, `${this.field}[${i}]`, (item as YamlNode | null) ?? undefined, undefined, this.line));
  }

  /** A key of a free-form mapping (a JSON Schema, say), with no check of which keys are allowed. */
  child(key: string): Value {
    const node = this.node;
    const pair = node !== undefined && isMap(node) ? node.items.find((p) => isScalar(p.key) && p.key.value === key) : undefined;
    const keyLine = pair === undefined ? undefined : this.file.lineOf(pair.key as YamlNode);
    return new Value(this.file, join(this.field, key), (pair?.value as YamlNode | null | undefined) ?? undefined, keyLine, this.line);
  }

  toJS(): unknown {
    return this.node === undefined ? undefined : this.file.toJS(this.node);
  }
}

/** The allowed keys of one mapping, as Values. */
export class Fields {
  readonly parent: Value;
  readonly #entries: ReadonlyMap<string, { node: YamlNode | undefined; line: number | undefined }>;

  constructor(parent: Value, entries: ReadonlyMap<string, { node: YamlNode | undefined; line: number | undefined }>) {
    this.parent = parent;
    this.#entries = entries;
  }

  get(key: string): Value {
    const entry = this.#entries.get(key);
    return new Value(this.parent.file, join(this.parent.field, key), entry?.node, entry?.line, this.parent.line);
  }
}

function join(parent: string, key: string): string {
  return parent === "" ? key : `${parent}.${key}`;
}

function unknownKey(key: string, allowed: readonly string[], hints: KeyHints, parent: string): string {
  const near = closest(key, allowed);
  if (near !== undefined) return `unknown key "${key}"; did you mean "${near}"?`;
  const home = hints[key];
  if (home !== undefined) return `unknown key "${key}" here; it belongs under ${home}`;
  const where = parent === "" ? "at the top" : `in ${parent}`;
  return `unknown key "${key}"; ${where} the keys are ${allowed.join(", ")}`;
}
