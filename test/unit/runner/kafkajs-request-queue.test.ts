import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { compiledAt, installed, unpatched } from "./kafkajs-text.ts";

const require = createRequire(import.meta.url);
const QUEUE_FILE = "src/network/requestQueue/index.js";
const INSTALLED = installed(QUEUE_FILE);

interface Queue {
  push(r: { entry: object; expectResponse: boolean; sendRequest: () => void }): void;
  fulfillRequest(r: { correlationId: number; payload: Buffer; size: number }): void;
  maybeThrottle(ms: number): void;
  checkPendingRequests(): void;
  destroy(): void;
  throttleCheckTimeoutId: unknown;
}
type QueueClass = new (o: object) => Queue;

const logger = { debug() {}, info() {}, warn() {}, error() {}, namespace: () => logger };

/** A queue of kafkajs's class compiled from `text`, allowing one request in flight, with what it sent. */
function queueOf(text: string) {
  const RequestQueue = compiledAt<QueueClass>(QUEUE_FILE, text);
  const queue = new RequestQueue({ maxInFlightRequests: 1, requestTimeout: 30_000, enforceRequestTimeout: false, clientId: "t", broker: "b:1", logger });
  const sent: number[] = [];
  const answered: number[] = [];
  let checks = 0;
  const check = queue.checkPendingRequests.bind(queue);
  queue.checkPendingRequests = () => {
    checks++;
    check();
  };
  const push = (correlationId: number) =>
    queue.push({
      entry: { apiKey: 0, apiName: "Produce", apiVersion: 3, correlationId, resolve: () => answered.push(correlationId), reject: () => undefined },
      expectResponse: true,
      sendRequest: () => sent.push(correlationId),
    });
  const answer = (correlationId: number) => queue.fulfillRequest({ correlationId, payload: Buffer.alloc(0), size: 0 });
  return { queue, sent, answered, push, answer, checks: () => checks };
}

const texts = () => ({ kafkajs: unpatched(QUEUE_FILE), patched: readFileSync(INSTALLED, "utf8") });

describe("kafkajs's connections check pending requests only while some wait (patches/kafkajs+2.2.4.patch, applied after npm ci)", () => {
  it("SYS-1 the installed kafkajs holds the patch, and its connections load it", () => {
    const installed = require("kafkajs/src/network/requestQueue/index.js") as { toString(): string };
    expect(installed.toString()).toContain("if (this.pending.length === 0) return");
  });

  it("SYS-1 an idle connection runs no timer once its requests are answered (kafkajs's own runs one every millisecond)", async () => {
    const counted: Record<string, number> = {};
    for (const [name, text] of Object.entries(texts())) {
      const q = queueOf(text);
      q.push(1);
      q.answer(1);
      const before = q.checks();
      await sleep(100);
      counted[name] = q.checks() - before;
      if (name === "patched") expect(q.queue.throttleCheckTimeoutId).toBeNull();
      q.queue.destroy();
    }
    expect(counted.kafkajs).toBeGreaterThan(10);
    expect(counted.patched).toBe(0);
  });

  it("SYS-1 a request behind the in-flight limit is sent once the one before is answered, as kafkajs sends it", () => {
    for (const text of Object.values(texts())) {
      const q = queueOf(text);
      q.push(1);
      q.push(2);
      expect(q.sent).toEqual([1]);
      q.answer(1);
      expect(q.sent).toEqual([1, 2]);
      q.answer(2);
      expect(q.answered).toEqual([1, 2]);
      q.queue.destroy();
    }
  });

  it("SYS-1 a request pushed while the broker throttles waits out the throttle, then is sent without another push", async () => {
    for (const text of Object.values(texts())) {
      const q = queueOf(text);
      q.queue.maybeThrottle(40);
      const at = Date.now();
      q.push(1);
      expect(q.sent).toEqual([]);
      while (q.sent.length === 0 && Date.now() - at < 2_000) await sleep(5);
      expect(q.sent).toEqual([1]);
      expect(Date.now() - at).toBeGreaterThanOrEqual(35);
      q.answer(1);
      q.queue.destroy();
    }
  });
});
