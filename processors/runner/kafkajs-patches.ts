/**
 * The changes the project makes to kafkajs 2.2.4, kept as one patch file
 * (`patches/kafkajs+2.2.4.patch`) that `patch-package --error-on-fail` applies after `npm ci`
 * (`postinstall`): an install where the patch does not apply fails. Each changed file carries
 * the mark below, so what runs can tell whether its kafkajs has them: an install made with
 * `--ignore-scripts` does not. The pipeline's start-up log and `oz0 doctor` say so.
 *
 * - A send's messages grouped by partition in linear time. kafkajs copies a partition's list
 *   for every message it adds, so a send of n messages to one partition costs n²/2 copies; the
 *   runner's sends hold a whole batch's outputs, most for one partition. Same lists, same order.
 * - A transactional producer's coordinators found once, not before every request (kafkajs sends
 *   FindCoordinator before AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn, four
 *   round trips in series a transaction that repeat the answer). They are forgotten when a
 *   request sent to one fails for want of a coordinator or outside the protocol, so the next
 *   request finds them again, as kafkajs's own retries expect.
 * - A connection's pending requests checked only while some wait, not by a timer every
 *   millisecond for as long as the connection lives.
 * - A send retried after a broker's loss sends every partition not yet answered to its leader
 *   of now. kafkajs kept the answers by broker and skipped, on a retry, a broker that had
 *   answered for other partitions: the messages of a partition whose leader had moved to it
 *   were never sent, yet the send resolved (seen by `npm run drill -- broker-loss`: 3 and 4 of
 *   600 inputs lost when the leader of most partitions was killed). A retry now also waits for
 *   every request of the attempt to settle, so none still in flight is sent twice.
 */
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** The patch file, from the project's root. */
export const KAFKAJS_PATCH_FILE = "patches/kafkajs+2.2.4.patch";

/** The line each patched file carries. */
export const KAFKAJS_PATCH_MARK = `Patched by oz0 (${KAFKAJS_PATCH_FILE})`;

export interface KafkajsPatch {
  /** The file under kafkajs's folder. */
  readonly file: string;
  readonly change: string;
  /** What runs without it. */
  readonly without: string;
}

export const KAFKAJS_PATCHES: readonly KafkajsPatch[] = [
  { file: "src/producer/groupMessagesPerPartition.js", change: "a send's messages grouped by partition in linear time", without: "a send of many messages to one partition costs quadratic time" },
  { file: "src/producer/eosManager/index.js", change: "a transaction's coordinators found once", without: "each transaction finds its coordinators four times" },
  { file: "src/network/requestQueue/index.js", change: "pending requests checked only while some wait", without: "each connection runs a timer every millisecond" },
  { file: "src/producer/sendMessages.js", change: "a send retried after a leader moved sends every partition not yet answered", without: "a send retried after a broker's loss can drop the messages of a partition whose leader moved, and resolve" },
];

export interface KafkajsPatchState extends KafkajsPatch {
  readonly applied: boolean;
}

/** The folder of the kafkajs this process loads. */
export function kafkajsFolder(): string {
  return dirname(createRequire(import.meta.url).resolve("kafkajs/package.json"));
}

/** Whether each change is in the kafkajs installed at `folder`. */
export function kafkajsPatches(folder = kafkajsFolder()): KafkajsPatchState[] {
  return KAFKAJS_PATCHES.map((p) => {
    const path = join(folder, p.file);
    return { ...p, applied: existsSync(path) && readFileSync(path, "utf8").includes(KAFKAJS_PATCH_MARK) };
  });
}

/** One line for a log or `oz0 doctor`: all in place, or which are missing and what that costs. */
export function describeKafkajsPatches(states: readonly KafkajsPatchState[]): string {
  const missing = states.filter((s) => !s.applied);
  if (missing.length === 0) return `kafkajs: the project's ${states.length} changes are in place (${KAFKAJS_PATCH_FILE})`;
  return `kafkajs: ${missing.length} of the project's ${states.length} changes are missing (${KAFKAJS_PATCH_FILE} not applied: npm ci runs it; --ignore-scripts skips it): ${missing.map((m) => `${m.change} (without it ${m.without})`).join("; ")}`;
}
