import { describe, expect, it } from "vitest";
import { Shutdown, StopFailed } from "../../lib/stopping.ts";
import { rejectionOf } from "../support/promises.ts";

const later = <T>(ms: number, f: () => T): Promise<T> => new Promise((resolve, reject) => setTimeout(() => {
  try {
    resolve(f());
  } catch (err) {
    reject(err instanceof Error ? err : new Error(String(err)));
  }
}, ms));

describe("a shutdown of several parts", () => {
  it("stops every part whatever another's stop did, and throws one error naming each that failed, with its words", async () => {
    const stopped: string[] = [];
    const shutdown = new Shutdown("the pipeline");
    // A part stopping beside the others fails while they stop: its rejection is kept, never left unobserved.
    const beside = shutdown.stop("the config table's reader", () => later(5, () => {
      throw new Error("the fetch in flight failed");
    }));
    await Promise.all([
      shutdown.stop("the application oz0.pipeline", () => later(20, () => {
        throw new Error("commit refused");
      })),
      shutdown.stop("the application oz0.sinks", () => later(10, () => stopped.push("sinks"))),
    ]);
    await shutdown.stop("the admin client", () => {
      throw new Error("not connected");
    });
    await shutdown.stop("the Redis client", () => void stopped.push("redis"));
    await beside;
    expect(stopped).toEqual(["sinks", "redis"]);
    const err = await rejectionOf(Promise.resolve().then(() => shutdown.done()));
    expect(err).toBeInstanceOf(StopFailed);
    expect((err as StopFailed).message).toBe(
      "the pipeline did not stop cleanly: the config table's reader failed to stop (the fetch in flight failed); the application oz0.pipeline failed to stop (commit refused); the admin client failed to stop (not connected)",
    );
    expect((err as StopFailed).failures.map((f) => f.part)).toEqual(["the config table's reader", "the application oz0.pipeline", "the admin client"]);
    expect(((err as StopFailed).cause as AggregateError).errors.map((e: Error) => e.message)).toEqual(["the fetch in flight failed", "commit refused", "not connected"]);
  });

  it("throws nothing when every part stopped", async () => {
    const shutdown = new Shutdown("the pipeline");
    await Promise.all([shutdown.stop("a", () => Promise.resolve()), shutdown.stop("b", () => undefined)]);
    expect(() => shutdown.done()).not.toThrow();
    expect(shutdown.failures).toEqual([]);
  });
});

describe("a bound on a shutdown", () => {
  it("gives up after its time with the parts still stopping, and not at all once disarmed", async () => {
    const shutdown = new Shutdown("oz0 mcp");
    const gaveUp: Array<readonly string[]> = [];
    void shutdown.stop("the MCP session s1", () => new Promise(() => undefined));
    const quick = shutdown.stop("the HTTP listener", () => Promise.resolve());
    shutdown.within(30, (stopping) => gaveUp.push(stopping));
    await quick;
    const disarm = shutdown.within(30, () => gaveUp.push(["disarmed"]));
    disarm();
    await new Promise((r) => setTimeout(r, 80));
    expect(gaveUp).toEqual([["the MCP session s1"]]);
  });
});
