// The output reader's thread (collect-thread.ts), with TypeScript loaded through tsx in it too.
import { register } from "tsx/esm/api";

register();
await import("./collect-thread.ts");
