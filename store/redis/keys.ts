/**
 * Every Redis key of the pipeline is built here. Keys of one run (or one tree) share a hash
 * tag, `{run:<id>}`, so a script that touches several of them runs unchanged on Redis Cluster.
 */
export class Keys {
  readonly prefix: string;

  constructor(prefix = "oz0") {
    if (!/^[A-Za-z0-9_.-]+$/.test(prefix)) throw new Error(`Redis key prefix ${JSON.stringify(prefix)} may hold only letters, digits, '_', '.' and '-'`);
    this.prefix = prefix;
  }

  private tagged(kind: "run" | "tree", id: string): string {
    if (id.length === 0) throw new Error(`an empty ${kind} ID cannot name Redis state`);
    // Braces inside the ID would change the hash tag; they are escaped away.
    return `${this.prefix}:{${kind}:${id.replace(/[{}]/g, "_")}}`;
  }

  /** Counts of events per run, with the input offsets already applied (idempotence). */
  tally(runId: string): string {
    return `${this.tagged("run", runId)}:tally`;
  }
}
