// Runs after `npm ci` (postinstall): makes kafkajs group a send's messages by partition in
// linear time. kafkajs 2.2.4 copies a partition's list for every message it adds
// (`[...current, message]`), so a send of n messages to one partition costs n²/2 copies and as
// much garbage; the runner's sends hold a whole batch's outputs, most of them for one
// partition. The result is the same lists in the same order. Plain Node, no packages.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import process from "node:process";
import { fileURLToPath } from "node:url";

export const FILE = "node_modules/kafkajs/src/producer/groupMessagesPerPartition.js";

export const ORIGINAL = `module.exports = ({ topic, partitionMetadata, messages, partitioner }) => {
  if (partitionMetadata.length === 0) {
    return {}
  }

  return messages.reduce((result, message) => {
    const partition = partitioner({ topic, partitionMetadata, message })
    const current = result[partition] || []
    return Object.assign(result, { [partition]: [...current, message] })
  }, {})
}
`;

export const LINEAR = `// Patched by oz0 (bin/patch-kafkajs.mjs): the same grouping, in linear time.
module.exports = ({ topic, partitionMetadata, messages, partitioner }) => {
  if (partitionMetadata.length === 0) {
    return {}
  }

  const result = {}
  for (const message of messages) {
    const partition = partitioner({ topic, partitionMetadata, message })
    const current = result[partition]
    if (current) current.push(message)
    else result[partition] = [message]
  }
  return result
}
`;

/** Patches the installed file when it is the text this patch knows; says what it did. */
export function patch(file = FILE) {
  if (!existsSync(file)) return `${file} is not installed; nothing to patch`;
  const now = readFileSync(file, "utf8");
  if (now === LINEAR) return "kafkajs already groups a send's messages in linear time";
  if (now !== ORIGINAL) return `${file} is not the kafkajs 2.2.4 text this patch knows; left as it is (sends of many messages to one partition cost quadratic time)`;
  writeFileSync(file, LINEAR);
  return "kafkajs now groups a send's messages by partition in linear time";
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stderr.write(`patch-kafkajs: ${patch()}\n`);
