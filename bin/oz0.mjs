#!/usr/bin/env node
// `oz0` as package.json's bin: runs bin/oz0.ts with tsx's loader, so the command works from a
// checkout (`npx oz0 ...`) and installed on the PATH alike, with no build step.
import { register } from "tsx/esm/api";

register();
await import("./oz0.ts");
