// Runs after `npm ci` (postinstall): three changes to kafkajs 2.2.4, each applied only to the
// exact text it knows, each keeping what kafkajs does and sends.
// - A send's messages grouped by partition in linear time. kafkajs copies a partition's list
//   for every message it adds (`[...current, message]`), so a send of n messages to one
//   partition costs n²/2 copies and as much garbage; the runner's sends hold a whole batch's
//   outputs, most of them for one partition. The result is the same lists in the same order.
// - A transactional producer's coordinators found once, not before every request. kafkajs
//   sends a FindCoordinator request before AddPartitionsToTxn, AddOffsetsToTxn,
//   TxnOffsetCommit and EndTxn, four round trips in series in each transaction that only
//   repeat the answer. The patched producer keeps the coordinators' node IDs and forgets them
//   when a request sent to one fails for want of a coordinator (NOT_COORDINATOR,
//   COORDINATOR_NOT_AVAILABLE) or fails outside the protocol (a lost connection, a timeout),
//   so the next request finds them again, as kafkajs's own retries expect.
// - A connection's pending requests checked only while some wait, not by a timer every
//   millisecond for as long as the connection lives.
// Plain Node, no packages.
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

/** Patches the installed grouping when it is the text this patch knows; says what it did. */
export function patch(file = FILE) {
  if (!existsSync(file)) return `${file} is not installed; nothing to patch`;
  const now = readFileSync(file, "utf8");
  if (now === LINEAR) return "kafkajs already groups a send's messages in linear time";
  if (now !== ORIGINAL) return `${file} is not the kafkajs 2.2.4 text this patch knows; left as it is (sends of many messages to one partition cost quadratic time)`;
  writeFileSync(file, LINEAR);
  return "kafkajs now groups a send's messages by partition in linear time";
}

export const EOS_FILE = "node_modules/kafkajs/src/producer/eosManager/index.js";

const EOS_MARK = "// Patched by oz0 (bin/patch-kafkajs.mjs): coordinators found once";

/** Each edit of the transaction manager: the text kafkajs 2.2.4 has (exactly once), and what replaces it. */
export const EOS_EDITS = [
  [
    `  const findTransactionCoordinator = () => {
    return cluster.findGroupCoordinator({
      groupId: transactionalId,
      coordinatorType: COORDINATOR_TYPES.TRANSACTION,
    })
  }
`,
    `  ${EOS_MARK}, not before every
  // request; forgotten on any error of a request sent to one, so the next finds them again.
  const coordinatorIds = new Map()
  const coordinatorOf = async (groupId, coordinatorType) => {
    const key = coordinatorType + ':' + groupId
    if (coordinatorIds.has(key)) return cluster.findBroker({ nodeId: coordinatorIds.get(key) })
    const broker = await cluster.findGroupCoordinator({ groupId, coordinatorType })
    coordinatorIds.set(key, broker.nodeId)
    return broker
  }
  const COORDINATOR_MOVED = ['GROUP_COORDINATOR_NOT_AVAILABLE', 'NOT_COORDINATOR_FOR_GROUP', 'COORDINATOR_NOT_AVAILABLE', 'NOT_COORDINATOR']
  const forgetIfMoved = e => {
    if (e.type === undefined || COORDINATOR_MOVED.includes(e.type)) coordinatorIds.clear()
  }
  const forgetCoordinators = e => {
    forgetIfMoved(e)
    throw e
  }
  const findTransactionCoordinator = () => {
    return coordinatorOf(transactionalId, COORDINATOR_TYPES.TRANSACTION).catch(forgetCoordinators)
  }
`,
  ],
  [
    `          } catch (e) {
            if (INIT_PRODUCER_RETRIABLE_PROTOCOL_ERRORS.includes(e.type)) {`,
    `          } catch (e) {
            forgetIfMoved(e)
            if (INIT_PRODUCER_RETRIABLE_PROTOCOL_ERRORS.includes(e.type)) {`,
  ],
  [
    "await broker.addPartitionsToTxn({ transactionalId, producerId, producerEpoch, topics })",
    "await broker.addPartitionsToTxn({ transactionalId, producerId, producerEpoch, topics }).catch(forgetCoordinators)",
  ],
  [
    `          transactionResult: true,
        })`,
    `          transactionResult: true,
        }).catch(forgetCoordinators)`,
  ],
  [
    `          transactionResult: false,
        })`,
    `          transactionResult: false,
        }).catch(forgetCoordinators)`,
  ],
  [
    `          groupId: consumerGroupId,
        })

        hasOffsetsAddedToTransaction = true

        let groupCoordinator = await cluster.findGroupCoordinator({
          groupId: consumerGroupId,
          coordinatorType: COORDINATOR_TYPES.GROUP,
        })`,
    `          groupId: consumerGroupId,
        }).catch(forgetCoordinators)

        hasOffsetsAddedToTransaction = true

        let groupCoordinator = await coordinatorOf(consumerGroupId, COORDINATOR_TYPES.GROUP).catch(forgetCoordinators)`,
  ],
  [
    `          } catch (e) {
            if (COMMIT_RETRIABLE_PROTOCOL_ERRORS.includes(e.type)) {`,
    `          } catch (e) {
            forgetIfMoved(e)
            if (COMMIT_RETRIABLE_PROTOCOL_ERRORS.includes(e.type)) {`,
  ],
];

/**
 * Applies `edits` to `file` when each one's text is there exactly once and `mark` is not;
 * `said` names the change in what it answers.
 */
function applyEdits(file, mark, edits, said) {
  if (!existsSync(file)) return `${file} is not installed; nothing to patch`;
  let text = readFileSync(file, "utf8");
  if (text.includes(mark)) return `${said.done} already`;
  if (edits.some(([before]) => text.split(before).length !== 2)) return `${file} is not the kafkajs 2.2.4 text this patch knows; left as it is (${said.otherwise})`;
  for (const [before, after] of edits) text = text.replace(before, () => after);
  writeFileSync(file, text);
  return `${said.done} now`;
}

/** Patches the installed transaction manager when it is the text these edits know; says what it did. */
export function patchCoordinators(file = EOS_FILE) {
  return applyEdits(file, EOS_MARK, EOS_EDITS, { done: "kafkajs's transactions find their coordinators once", otherwise: "each transaction finds its coordinators four times" });
}

export const QUEUE_FILE = "node_modules/kafkajs/src/network/requestQueue/index.js";

const QUEUE_MARK = "// Patched by oz0 (bin/patch-kafkajs.mjs): no check scheduled";

/**
 * kafkajs 2.2.4 schedules a check of a connection's pending requests even when none are
 * pending, with a negative delay, so each connection runs a timer every millisecond while it
 * lives. The patched queue schedules one only while a request waits (behind the in-flight
 * limit or a broker's throttle); `push` schedules one when a request starts to wait.
 */
export const QUEUE_EDITS = [
  [
    `  scheduleCheckPendingRequests() {
`,
    `  scheduleCheckPendingRequests() {
    ${QUEUE_MARK} while
    // nothing is pending: push() schedules one when a request starts to wait.
    if (this.pending.length === 0) return
`,
  ],
];

/** Patches the installed request queue when it is the text this edit knows; says what it did. */
export function patchRequestQueue(file = QUEUE_FILE) {
  return applyEdits(file, QUEUE_MARK, QUEUE_EDITS, { done: "kafkajs's connections check pending requests only while some wait", otherwise: "each connection runs a timer every millisecond" });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stderr.write(`patch-kafkajs: ${patch()}\n`);
  process.stderr.write(`patch-kafkajs: ${patchCoordinators()}\n`);
  process.stderr.write(`patch-kafkajs: ${patchRequestQueue()}\n`);
}
