/**
 * What a log line, an event or an error message may say of an endpoint: its URL with any
 * password replaced. Credentials ride in URLs (`redis://user:pass@host`, a registry's
 * `https://key:secret@host`), and an error that names where it failed must not carry them.
 */

/** The URL with its password (and a lone user part, which is often a token) replaced by `***`. */
export function redactUrl(url: string): string {
  let parsed: URL | null = null;
  try {
    if (url.includes("://")) parsed = new URL(url);
  } catch {
    parsed = null;
  }
  // Not a URL (such as `user:pass@host:port`): what follows the last '@' is safe to show.
  if (parsed === null) return url.includes("@") ? `***@${url.slice(url.lastIndexOf("@") + 1)}` : url;
  if (parsed.password === "" && parsed.username === "") return url;
  if (parsed.password !== "") parsed.password = "***";
  else parsed.username = "***";
  return parsed.toString().replace(/\/$/, url.endsWith("/") ? "/" : "");
}

/** Every occurrence of each secret in a text replaced by `***`; empty secrets are ignored. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s !== "") out = out.split(s).join("***");
  return out;
}
