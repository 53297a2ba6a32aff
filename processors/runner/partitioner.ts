/**
 * kafkajs's default (Java-compatible) partitioner, remembering each key's partition. kafkajs
 * asks the partitioner once per message; the default one hashes the key (murmur2 over its
 * UTF-8 bytes) and filters the topic's partition list every time. A batch's outputs repeat a
 * few keys (runs, trees, tenants) many times, so a key's partition is worked out once.
 *
 * A keyed message's partition depends only on its key and the topic's partition count (the
 * Java client's rule: murmur2(key) mod count, whether or not every partition has a leader),
 * so remembering it by those two moves no message. A message with a partition of its own, or
 * without a string key, goes to the default partitioner unchanged.
 */
import { Partitioners, type ICustomPartitioner, type PartitionerArgs } from "kafkajs";

/** Keys remembered per producer before the memory starts afresh. */
export const REMEMBERED_KEYS = 50_000;

export const RememberingPartitioner: ICustomPartitioner = () => {
  const partitioner = Partitioners.DefaultPartitioner();
  const known = new Map<string, number>();
  return (args: PartitionerArgs): number => {
    const { message, partitionMetadata } = args;
    if ((message.partition !== null && message.partition !== undefined) || typeof message.key !== "string") return partitioner(args);
    const key = `${partitionMetadata.length}:${message.key}`;
    let partition = known.get(key);
    if (partition === undefined) {
      partition = partitioner(args);
      if (known.size >= REMEMBERED_KEYS) known.clear();
      known.set(key, partition);
    }
    return partition;
  };
};
