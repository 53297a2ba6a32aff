/**
 * A throwaway HTTP server on a free loopback port for one test: `run` is given its base URL
 * (`http://127.0.0.1:<port>`), and the server is closed when `run` ends, whether it passed or
 * threw. Gives the base URL, for a test that then checks what happens once nothing answers there.
 */
import { createServer, type RequestListener } from "node:http";
import type { AddressInfo } from "node:net";

export async function withLocalServer(handler: RequestListener, run: (base: string) => Promise<void>): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    await run(base);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  return base;
}
