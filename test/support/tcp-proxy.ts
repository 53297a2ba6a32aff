/**
 * A TCP proxy of a test's own in front of a shared service, which the test can cut and
 * restore: an outage of that service for the test alone, without stopping the service that
 * other tests use. Cut, it refuses new connections and resets the open ones.
 */
import { createServer, connect, type Server, type Socket } from "node:net";

export class TcpProxy {
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<Socket>();
  #server: Server | null = null;
  #port = 0;

  constructor(target: { host: string; port: number }) {
    this.#target = target;
  }

  /** The local port it listens on (the same across cuts). */
  get port(): number {
    return this.#port;
  }

  get up(): boolean {
    return this.#server !== null;
  }

  /** Listens (on a free port the first time, then on the same port). */
  async start(): Promise<void> {
    if (this.#server) return;
    const server = createServer((client) => {
      const upstream = connect(this.#target.port, this.#target.host);
      for (const s of [client, upstream]) {
        this.#sockets.add(s);
        s.on("close", () => this.#sockets.delete(s));
        s.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.#port, "127.0.0.1", () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("the proxy has no TCP address");
    this.#port = address.port;
    this.#server = server;
  }

  /** The outage: no new connections, and every open one is reset. */
  async cut(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = null;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of this.#sockets) s.resetAndDestroy();
    this.#sockets.clear();
    await closed;
  }

  /** Ends the outage, on the same port. */
  async restore(): Promise<void> {
    await this.start();
  }

  async stop(): Promise<void> {
    await this.cut();
  }
}
