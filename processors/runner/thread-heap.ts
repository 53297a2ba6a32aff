/**
 * The Kafka thread's heap. A worker thread's heap starts small (a young generation of 1 to 2 MB,
 * an old generation grown from a few MB), and the Kafka thread allocates fast: fetch responses
 * decoded, produce requests encoded, a promise or two a request. With V8's own sizes it
 * scavenged every few ms and ran a full mark-compact about every 0.35 s under load, holding
 * some 12 MB live: the requests in flight outlive a scavenge that comes that soon, so they are
 * promoted and fill the small old generation. A full collection also drops the optimized code
 * of closures that are no longer alive, and kafkajs makes a closure per request in many places
 * (`forEach`, `map` and `find` callbacks in its send, fetch and encode paths), so each one was
 * compiled again by TurboFan after every collection (`docs/load.md`, "The Kafka thread's
 * heap").
 *
 * V8 takes a heap's starting sizes from its flags when the heap is made, so they are set just
 * before the thread is started and put back once it runs: the process's own heap, made before,
 * keeps its sizes, and so does any thread started after.
 */
import { setFlagsFromString } from "node:v8";
import { Worker, type WorkerOptions } from "node:worker_threads";
import { wholeFromEnv, type Env } from "./settings.ts";

export interface ThreadHeap {
  /** The young generation's semi-space from the start, in MB (`--min-semi-space-size`); 0 leaves V8's. */
  readonly youngMb: number;
  /** The old generation's size before its first full collection, in MB (`--initial-old-space-size`); 0 leaves V8's. */
  readonly oldMb: number;
}

export const DEFAULT_THREAD_HEAP: ThreadHeap = { youngMb: 16, oldMb: 128 };

/** `OZ0_KAFKA_THREAD_YOUNG_MB` (default 16) and `OZ0_KAFKA_THREAD_OLD_MB` (default 128); 0 leaves V8's own. */
export function threadHeapFromEnv(env: Env = process.env): ThreadHeap {
  return {
    youngMb: wholeFromEnv(env, "OZ0_KAFKA_THREAD_YOUNG_MB", DEFAULT_THREAD_HEAP.youngMb, 0, 512, "MB"),
    oldMb: wholeFromEnv(env, "OZ0_KAFKA_THREAD_OLD_MB", DEFAULT_THREAD_HEAP.oldMb, 0, 16_384, "MB"),
  };
}

/** The V8 flags that give a heap made now `heap`'s sizes, and those that put the process's back. */
export function heapFlags(heap: ThreadHeap, started: readonly string[] = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)]): { set: string[]; back: string[] } {
  const set: string[] = [];
  const back: string[] = [];
  for (const [flag, mb] of [
    ["--min-semi-space-size", heap.youngMb],
    ["--initial-old-space-size", heap.oldMb],
  ] as const) {
    if (mb === 0) continue;
    // What the process was started with, if it was given the flag; else V8's default (0).
    const spelled = [`${flag}=`, `--${flag.slice(2).replace(/-/g, "_")}=`];
    const given = [...started].reverse().find((a) => spelled.some((s) => a.startsWith(s)));
    set.push(`${flag}=${mb}`);
    back.push(given ?? `${flag}=0`);
  }
  return { set, back };
}

/** A worker whose heap starts with `heap`'s sizes; the flags are put back once it is online, or if it cannot start. */
export function workerWithHeap(url: URL | string, options: WorkerOptions, heap: ThreadHeap): Worker {
  const { set, back } = heapFlags(heap);
  if (set.length === 0) return new Worker(url, options);
  let restored = false;
  const restore = (): void => {
    if (restored) return;
    restored = true;
    for (const f of back) setFlagsFromString(f);
  };
  for (const f of set) setFlagsFromString(f);
  let worker: Worker;
  try {
    worker = new Worker(url, options);
  } catch (err) {
    restore();
    throw err;
  }
  worker.once("online", restore);
  worker.once("error", restore);
  worker.once("exit", restore);
  return worker;
}
