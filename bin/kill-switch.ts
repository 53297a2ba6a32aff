/**
 * `npm run config -- kill-switch <plugin>/<tool> --reason "..." [--off] [--by name]` (LOOP-9):
 * throws a kill switch on a plugin's tool, cluster-wide, or releases it (`--off`). The switch
 * is a row of the compacted configuration topic (kind `kill_switch`), and each change writes
 * an audit entry (`kill_switch.thrown`, `kill_switch.released`) in the same request, after it.
 */
import type { Kafka } from "kafkajs";
import { CLUSTER_AUDIT_KEY, asKillSwitch, killSwitchAudit, killSwitchId, killSwitchKey, killSwitchRecord, parseToolName, type KillSwitch } from "../config/kill-switch.ts";
import type { KillSwitchOutcome } from "../processors/loops/kill-switch.ts";
import { CONFIG_TOPIC, ConfigTable } from "../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../processors/runner/endpoints.ts";
import type { Logger } from "../processors/runner/log.ts";
import type { Serde } from "../schemas/serde.ts";
import { ensureTopics } from "../topology/create.ts";
import { topic } from "../topology/topics.ts";

export interface KillSwitchRequest {
  /** `<plugin>/<tool>`. */
  readonly tool: string;
  readonly reason: string | undefined;
  readonly by: string;
  /** Release the switch instead of throwing it. */
  readonly off: boolean;
  readonly at: number;
}

/** Throws or releases a switch; a switch already in the state asked for changes nothing and writes no audit entry. */
export async function setKillSwitch(deps: { kafka: Kafka; serde: Serde; log: Logger }, req: KillSwitchRequest): Promise<KillSwitchOutcome> {
  const name = parseToolName(req.tool);
  if ("error" in name) return { error: name.error };
  const reason = req.reason?.trim() ?? "";
  if (reason === "") return { error: `a kill switch is ${req.off ? "released" : "thrown"} with a reason: give --reason "...", which the audit log${req.off ? "" : " and every refused call"} shows` };

  const admin = deps.kafka.admin();
  await admin.connect();
  await ensureTopics(admin, [topic(CONFIG_TOPIC), topic("oz0.audit")]).finally(() => admin.disconnect());
  await deps.serde.registerAll();
  const table = await ConfigTable.start(deps.kafka, deps.serde, deps.log);
  const current = asKillSwitch(table.get("kill_switch", killSwitchId(name.plugin, name.tool)));
  await table.stop();

  const id = killSwitchId(name.plugin, name.tool);
  if (!req.off && current !== null) return { changed: "none", why: `the kill switch on ${id} is already thrown (${new Date(current.at).toISOString()} by ${current.by}: ${current.reason})` };
  if (req.off && current === null) return { changed: "none", why: `no kill switch is thrown on ${id}` };

  const sw: KillSwitch = { plugin: name.plugin, tool: name.tool, reason, by: req.by, at: req.at };
  const audit = req.off ? killSwitchAudit("released", { ...sw, thrownAt: current?.at }) : killSwitchAudit("thrown", sw);
  // Not in a Kafka transaction: a transaction's commit marker would end the configuration
  // topic, and a table catching up waits for a record at the topic's last offset. One request
  // carries both, the row first.
  const producer = deps.kafka.producer(EXACTLY_ONCE_PRODUCER);
  await producer.connect();
  try {
    await producer.sendBatch({
      acks: -1,
      topicMessages: [
        { topic: CONFIG_TOPIC, messages: [{ key: killSwitchKey(name.plugin, name.tool), value: req.off ? null : deps.serde.encode("ConfigRecord", killSwitchRecord(sw)) }] },
        { topic: "oz0.audit", messages: [{ key: CLUSTER_AUDIT_KEY, value: deps.serde.encode("AuditEvent", audit) }] },
      ],
    });
  } finally {
    await producer.disconnect();
  }
  return req.off && current !== null ? { changed: "released", was: current } : { changed: "thrown", sw };
}
