/**
 * Writes the parts of the docs that the declared topology gives (`topology/docs.ts`): the
 * processors' and punctuators' tables and the diagram in docs/processors.md, the topology's
 * text in docs/architecture.md. `--check` writes nothing and exits 1 when a file differs.
 *
 *   npm run docs:topology [-- --check]
 */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { topologyDocs, withBlock } from "../topology/docs.ts";
import { PIPELINE_TOPOLOGY } from "../topology/pipeline.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Each docs file as it is and as the topology writes it. */
export function generatedDocs(dir = root): Array<{ file: string; now: string; generated: string }> {
  const byFile = new Map<string, string>();
  for (const b of topologyDocs(PIPELINE_TOPOLOGY)) {
    const text = byFile.get(b.file) ?? readFileSync(join(dir, b.file), "utf8");
    byFile.set(b.file, withBlock(text, b));
  }
  return [...byFile].map(([file, generated]) => ({ file, now: readFileSync(join(dir, file), "utf8"), generated }));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const check = process.argv.includes("--check");
  let differ = 0;
  for (const d of generatedDocs()) {
    if (d.now === d.generated) continue;
    differ++;
    if (check) console.error(`${d.file} differs from what the topology gives: run npm run docs:topology`);
    else {
      writeFileSync(join(root, d.file), d.generated);
      console.log(`${d.file} written`);
    }
  }
  if (differ === 0) console.log("the docs match the topology");
  process.exitCode = check && differ > 0 ? 1 : 0;
}
