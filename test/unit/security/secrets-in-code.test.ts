import { execFileSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { LOCAL_STACK } from "../../../stack/local.ts";

const ROOT = new URL("../../../", import.meta.url);

/**
 * Where a literal credential may be written: the local stack (its documented development
 * credentials), docker-compose.yml (the same, as overridable defaults), and tests.
 */
function allowed(path: string): boolean {
  return path.startsWith("stack/") || path === "docker-compose.yml" || path.startsWith("test/");
}

const CODE = /\.(ts|mts|js|mjs|cjs|sh|ya?ml|json)$|(^|\/)Dockerfile$/;

/** What looks like a credential written into code, as `<pattern>: <text>`. */
export function findSecrets(path: string, text: string, known: readonly string[]): string[] {
  const found: string[] = [];
  for (const k of known) if (text.includes(k)) found.push(`a local stack credential: ${k}`);
  if (!CODE.test(path)) return found;
  const patterns: Array<[string, RegExp]> = [
    ["a private key", /-----BEGIN [A-Z ]*PRIVATE KEY-----/],
    ["an AWS access key ID", /\b(AKIA|ASIA)[0-9A-Z]{16}\b/],
    ["a URL with a password", /\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@"'`]*:[^\s/@"'`$<[{]+@[^\s"'`]/i],
    ["a password, secret or token assigned a literal", /\b(password|passwd|secret|secret_?key|api_?key|access_?token|auth_?token)["']?\s*[:=]\s*["'`][^"'`\s$]{4,}["'`]/i],
  ];
  // Comments document the forms (`redis://user:pass@host`); code is what could hold a credential.
  const code = text
    .split("\n")
    .filter((line) => !/^\s*(\*|\/\/|\/\*|#)/.test(line))
    .join("\n");
  for (const [what, re] of patterns) {
    const m = re.exec(code);
    if (m) found.push(`${what}: ${m[0].slice(0, 80)}`);
  }
  return found;
}

function repositoryFiles(): string[] {
  const out = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z"], { cwd: ROOT, encoding: "utf8" });
  return out.split("\0").filter((p) => p !== "" && !p.startsWith("node_modules/"));
}

describe("no credential written into the code", () => {
  const known = [LOCAL_STACK.OZ0_MINIO_ACCESS_KEY, LOCAL_STACK.OZ0_MINIO_SECRET_KEY];

  it("the scan finds a planted credential of each kind, and passes reading an environment variable", () => {
    expect(findSecrets("bin/x.ts", `const c = { secretKey: "${LOCAL_STACK.OZ0_MINIO_SECRET_KEY}" };`, known)).toHaveLength(2);
    expect(findSecrets("bin/x.ts", 'const url = "redis://:hunter2@cache:6379";', known)).toEqual(["a URL with a password: redis://:hunter2@c"]);
    expect(findSecrets("bin/x.ts", 'const p = { password: "hunter2" };', known)).toHaveLength(1);
    expect(findSecrets("bin/x.ts", "-----BEGIN RSA PRIVATE KEY-----", known)).toHaveLength(1);
    expect(findSecrets("bin/x.ts", "const id = 'AKIAIOSFODNN7EXAMPLE';", known)).toHaveLength(1);
    expect(findSecrets("bin/x.ts", "const p = { password: env.OZ0_KAFKA_PASSWORD ?? \"\" };", known)).toEqual([]);
    expect(findSecrets("docs/x.md", "`redis://user:pass@host:port`", known)).toEqual([]);
  });

  it("the development credentials in code are the ones stack/env.sh documents and starts MinIO with", () => {
    const env = readFileSync(new URL("stack/env.sh", ROOT), "utf8");
    expect(env).toContain(`OZ0_MINIO_ACCESS_KEY:-${LOCAL_STACK.OZ0_MINIO_ACCESS_KEY}}`);
    expect(env).toContain(`OZ0_MINIO_SECRET_KEY:-${LOCAL_STACK.OZ0_MINIO_SECRET_KEY}}`);
  });

  it("no file outside stack/, docker-compose.yml and the tests holds a literal credential", () => {
    const files = repositoryFiles();
    expect(files).toContain("processors/runner/endpoints.ts");
    const hits: string[] = [];
    for (const path of files) {
      if (allowed(path)) continue;
      const url = new URL(path, ROOT);
      let text: string;
      try {
        if (statSync(url).size > 2_000_000) continue;
        text = readFileSync(url, "utf8");
      } catch {
        continue; // deleted in the working tree
      }
      for (const f of findSecrets(path, text, known)) hits.push(`${path}: ${f}`);
    }
    expect(hits).toEqual([]);
  });
});
