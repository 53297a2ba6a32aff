// Runs before `npm start` and `npm test`: on a fresh clone it installs the locked
// dependencies, so those two commands are all a new machine needs. Plain Node, no packages.
import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import process from "node:process";

const marker = "node_modules/.package-lock.json";
const stale = !existsSync(marker) || statSync(marker).mtimeMs < statSync("package-lock.json").mtimeMs;
if (stale) {
  process.stderr.write("installing dependencies (npm ci)\n");
  execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { stdio: "inherit" });
}
