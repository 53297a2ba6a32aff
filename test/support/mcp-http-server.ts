/**
 * An MCP server of the official SDK's own over Streamable HTTP on loopback, for tests that put
 * `oz0 mcp` in front of a real server: its tools, and what each call answers. A session a
 * transport, as the SDK's examples keep them.
 */
import { randomUUID } from "node:crypto";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

export interface McpTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
}

/** What a call answers: an MCP CallToolResult. */
export type McpAnswer = { content: Array<Record<string, unknown>>; structuredContent?: Record<string, unknown>; _meta?: Record<string, unknown>; isError?: boolean };

export interface McpHttpServer {
  readonly url: string;
  close(): Promise<void>;
}

/** Starts the server; `answer` is called with each call's name, arguments and `_meta`. */
export async function startMcpHttpServer(name: string, tools: readonly McpTool[], answer: (tool: string, args: Record<string, unknown>, meta: Record<string, unknown> | undefined) => McpAnswer): Promise<McpHttpServer> {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const http: HttpServer = createHttpServer((req, res) => {
    void (async () => {
      const id = req.headers["mcp-session-id"];
      const known = typeof id === "string" ? transports.get(id) : undefined;
      if (known) return known.handleRequest(req, res);
      const mcp = new Server({ name, version: "1" }, { capabilities: { tools: {} } });
      mcp.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...tools] }));
      mcp.setRequestHandler(CallToolRequestSchema, (r) => answer(r.params.name, r.params.arguments ?? {}, r.params._meta));
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (sid) => void transports.set(sid, transport) });
      await mcp.connect(transport);
      await transport.handleRequest(req, res);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      await Promise.allSettled([...transports.values()].map((t) => t.close()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
