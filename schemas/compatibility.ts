/**
 * BACKWARD compatibility of each schema with every version it has had. Released versions are
 * kept in `schemas/history/<Name>/<n>.avsc`; the newest must equal the schema in use, so a
 * change to a schema is a new version there, and this build must be able to read events any
 * earlier version wrote.
 */
import { readdirSync, readFileSync } from "node:fs";
import avro from "avsc";
import { schema, type SchemaName } from "./catalog.ts";

export interface HistoryVersion {
  readonly version: number;
  readonly json: avro.Schema;
}

export function history(name: SchemaName): HistoryVersion[] {
  const dir = new URL(`./history/${name}/`, import.meta.url);
  return readdirSync(dir)
    .filter((f) => /^\d+\.avsc$/.test(f))
    .map((f) => ({ version: Number(f.slice(0, -5)), json: JSON.parse(readFileSync(new URL(f, dir), "utf8")) as avro.Schema }))
    .sort((a, b) => a.version - b.version);
}

/** Why `reader` cannot read what `writer` wrote, or undefined when it can. */
export function backwardProblem(reader: avro.Schema, writer: avro.Schema): string | undefined {
  try {
    avro.Type.forSchema(reader).createResolver(avro.Type.forSchema(writer));
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** Every way the schema in use breaks with its history; empty when it is compatible. */
export function compatibilityProblems(name: SchemaName, current: avro.Schema = schema(name).json): string[] {
  const versions = history(name);
  const problems: string[] = [];
  const newest = versions[versions.length - 1];
  if (!newest) problems.push(`${name} has no released version in schemas/history/${name}/`);
  else if (JSON.stringify(newest.json) !== JSON.stringify(current)) {
    problems.push(`${name}.avsc differs from its newest released version ${newest.version}: copy it to schemas/history/${name}/${newest.version + 1}.avsc`);
  }
  for (const v of versions) {
    const p = backwardProblem(current, v.json);
    if (p) problems.push(`${name} cannot read events written with version ${v.version}: ${p}`);
  }
  return problems;
}
