/**
 * Tool results in the MCP CallToolResult shape, as runtimes publish them:
 * `{content: [{type: "text", text}, ...], structuredContent?, isError?, _meta?}`.
 */
export interface McpContentItem {
  readonly type: string;
  readonly text?: string;
  readonly [key: string]: unknown;
}

export interface McpResult {
  readonly content: readonly McpContentItem[];
  readonly structuredContent?: unknown;
  readonly isError?: boolean;
  readonly _meta?: Readonly<Record<string, unknown>>;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** Reads a result's JSON, or says what is wrong with it. */
export function readMcpResult(json: string): McpResult | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (err) {
    return { error: `the result is not JSON (${(err as Error).message}): publish it as an MCP CallToolResult` };
  }
  if (!isObject(value)) return { error: "the result must be a JSON object in the MCP CallToolResult shape ({content: [...]})" };
  const content = value.content;
  if (!Array.isArray(content) || !content.every((c) => isObject(c) && typeof c.type === "string")) {
    return { error: "the result's content must be a list of items, each with a type" };
  }
  if (value._meta !== undefined && !isObject(value._meta)) return { error: "the result's _meta must be an object" };
  return value as unknown as McpResult;
}

/**
 * What fitting works on: the text items joined (parsed when the text is JSON, so its natural
 * parts are keys and items), else the structured content.
 */
export function fittable(result: McpResult): unknown {
  const texts = result.content.filter((c) => c.type === "text" && typeof c.text === "string").map((c) => c.text as string);
  if (texts.length === 0) return result.structuredContent ?? "";
  const text = texts.join("\n");
  const trimmed = text.trimStart();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}
