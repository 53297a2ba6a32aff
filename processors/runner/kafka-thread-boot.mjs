// The Kafka thread's entry (kafka-thread.ts): TypeScript is loaded through tsx in this thread
// too, however the process itself was started (tsx, or a test runner with a loader of its own).
import { register } from "tsx/esm/api";

register();
await import("./kafka-thread-worker.ts");
