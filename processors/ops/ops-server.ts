/**
 * One HTTP server per pipeline process, on loopback by default: `GET /health/live`,
 * `GET /health/ready` (JSON, 200 or 503) and `GET /metrics` (Prometheus text, from prom-client: `metrics.ts`; `?name=` once or more for
 * only those families).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Health } from "./health.ts";
import type { Logger } from "../runner/log.ts";
import type { MetricsRegistry } from "./metrics.ts";

export const DEFAULT_OPS_PORT = 9464;
export const DEFAULT_OPS_HOST = "127.0.0.1";

export interface OpsAddress {
  readonly host: string;
  /** 0 takes a free port. */
  readonly port: number;
}

/** `OZ0_METRICS_PORT` (default 9464) and `OZ0_METRICS_HOST` (default 127.0.0.1). */
export function opsAddressFromEnv(env: Record<string, string | undefined> = process.env): OpsAddress {
  const raw = env.OZ0_METRICS_PORT;
  const port = raw === undefined || raw === "" ? DEFAULT_OPS_PORT : Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`OZ0_METRICS_PORT=${raw} is not a port: give a whole number from 0 (any free port) to 65535`);
  return { host: env.OZ0_METRICS_HOST || DEFAULT_OPS_HOST, port };
}

export interface OpsServer {
  /** Such as `http://127.0.0.1:9464`. */
  readonly url: string;
  close(): Promise<void>;
}

export interface OpsServerOptions {
  address: OpsAddress;
  health: Health;
  /** What `/metrics` serves. */
  metrics: MetricsRegistry;
  log: Logger;
}

function send(res: import("node:http").ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
  res.end(body);
}

export async function startOpsServer({ address, health, metrics, log }: OpsServerOptions): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    const [path, query = ""] = (req.url ?? "/").split("?", 2);
    if (req.method !== "GET" && req.method !== "HEAD") return send(res, 405, "text/plain", "only GET\n");
    const failed = (err: unknown): void => {
      log.error("operations endpoint failed", { path, error: err });
      send(res, 500, "text/plain", `${err instanceof Error ? err.message : String(err)}\n`);
    };
    try {
      if (path === "/health/live") {
        const l = health.live();
        return send(res, l.live ? 200 : 503, "application/json", `${JSON.stringify(l)}\n`);
      }
      if (path === "/health/ready") {
        const r = health.ready();
        return send(res, r.ready ? 200 : 503, "application/json", `${JSON.stringify(r)}\n`);
      }
      if (path === "/metrics") {
        // `?name=a&name=b`: only those families (the others are not collected).
        const only = new URLSearchParams(query).getAll("name");
        metrics.render(only.length > 0 ? only : undefined).then((text) => send(res, 200, metrics.contentType, text), failed);
        return;
      }
      return send(res, 404, "text/plain", "not found: GET /health/live, /health/ready or /metrics\n");
    } catch (err) {
      return failed(err);
    }
  });
  await new Promise<void>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException): void => {
      const hint = err.code === "EADDRINUSE" ? ": another process serves it; set OZ0_METRICS_PORT to a free port (0 takes any)" : "";
      reject(new Error(`the operations endpoint cannot listen on ${address.host}:${address.port}${hint} (${err.message})`, { cause: err }));
    };
    server.once("error", failed);
    server.listen(address.port, address.host, () => {
      server.off("error", failed);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  const host = bound.family === "IPv6" ? `[${bound.address}]` : bound.address;
  const url = `http://${host}:${bound.port}`;
  log.info("operations endpoint listening", { url, paths: ["/health/live", "/health/ready", "/metrics"] });
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
