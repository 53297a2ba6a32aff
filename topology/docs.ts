/**
 * The docs' parts written from a declared topology (pure): the processors' table, the
 * punctuators' table, a Mermaid diagram and the `describe()` text, each between marker
 * comments of its docs file. `npm run docs:topology` writes them (`bin/docs-topology.ts`); a
 * unit test fails when the docs differ from what the topology gives.
 */
import type { NodeShape, PunctuatorShape, Topology } from "./declare.ts";
import { Oz0Error } from "../lib/errors.ts";

export interface GeneratedBlock {
  /** The docs file, from the repository's root. */
  readonly file: string;
  /** Its markers are `<!-- topology:<name> start -->` and `<!-- topology:<name> end -->`. */
  readonly name: string;
  readonly body: string;
}

const code = (s: string): string => `\`${s}\``;

/** One row a processor: its application, what it reads (from Kafka, or chained after its writer), what it writes, its state. */
export function processorsTable(t: Topology<NodeShape, PunctuatorShape>): string {
  const rows = ["| processor | application | reads | writes | state |", "| --- | --- | --- | --- | --- |"];
  for (const a of t.applications) {
    for (const n of a.processors) {
      const p = n.processor;
      const writer = t.edges.find((e) => e.to === p.name);
      const reads = writer ? `${code(p.input)} (chained after ${code(writer.from)}, in process)` : code(p.input);
      const writes = p.outputs.length > 0 ? p.outputs.map(code).join(", ") : "nothing";
      rows.push(`| ${code(p.name)} | ${code(a.name)} | ${reads} | ${writes} | ${n.state ?? ""} |`);
    }
  }
  return rows.join("\n");
}

export function punctuatorsTable(t: Topology<NodeShape, PunctuatorShape>): string {
  const rows = ["| punctuator | application | every | writes | what |", "| --- | --- | --- | --- | --- |"];
  for (const a of t.applications) for (const p of a.punctuators) rows.push(`| ${code(p.name)} | ${code(a.name)} | ${p.every} | ${p.writes.map(code).join(", ")} | ${p.doc} |`);
  return rows.join("\n");
}

const id = (prefix: string, name: string): string => `${prefix}_${name.replace(/[^A-Za-z0-9]/g, "_")}`;

/**
 * A Mermaid flowchart: topics as rounded nodes, processors in a box a application, punctuators
 * as hexagons; a dotted arrow marks a processor chained in process after its input's writer.
 */
export function mermaid(t: Topology<NodeShape, PunctuatorShape>): string {
  const lines = ["```mermaid", "flowchart LR"];
  const topics = new Set<string>();
  for (const a of t.applications) {
    for (const n of a.processors) for (const x of [n.processor.input, ...n.processor.outputs]) topics.add(x);
    for (const p of a.punctuators) for (const x of p.writes) topics.add(x);
  }
  for (const x of topics) lines.push(`  ${id("t", x)}([${x}])`);
  for (const a of t.applications) {
    lines.push(`  subgraph ${id("app", a.name)}["application ${a.name}"]`);
    for (const n of a.processors) lines.push(`    ${id("p", n.processor.name)}[${n.processor.name}]`);
    for (const p of a.punctuators) lines.push(`    ${id("u", p.name)}{{${p.name}}}`);
    lines.push("  end");
  }
  for (const a of t.applications) {
    for (const n of a.processors) {
      const p = n.processor;
      const writer = t.edges.find((e) => e.to === p.name);
      if (writer) lines.push(`  ${id("p", writer.from)} -. ${p.input} .-> ${id("p", p.name)}`);
      else lines.push(`  ${id("t", p.input)} --> ${id("p", p.name)}`);
      for (const o of p.outputs) lines.push(`  ${id("p", p.name)} --> ${id("t", o)}`);
    }
    for (const p of a.punctuators) for (const o of p.writes) lines.push(`  ${id("u", p.name)} --> ${id("t", o)}`);
  }
  lines.push("```");
  return lines.join("\n");
}

/** Every generated part of the docs, file by file. */
export function topologyDocs(t: Topology<NodeShape, PunctuatorShape>): GeneratedBlock[] {
  return [
    { file: "docs/processors.md", name: "processors", body: processorsTable(t) },
    { file: "docs/processors.md", name: "punctuators", body: punctuatorsTable(t) },
    { file: "docs/processors.md", name: "diagram", body: mermaid(t) },
    { file: "docs/architecture.md", name: "describe", body: "```text\n" + t.describe() + "```" },
  ];
}

export class MissingMarkers extends Oz0Error {}

/** `text` with the block's body between its markers; throws when the markers are missing. */
export function withBlock(text: string, block: Pick<GeneratedBlock, "file" | "name" | "body">): string {
  const start = `<!-- topology:${block.name} start (written by npm run docs:topology) -->`;
  const end = `<!-- topology:${block.name} end -->`;
  const i = text.indexOf(start);
  const j = text.indexOf(end);
  if (i < 0 || j < i) throw new MissingMarkers(`${block.file} has no markers "${start}" ... "${end}"`);
  return `${text.slice(0, i + start.length)}\n${block.body}\n${text.slice(j)}`;
}
