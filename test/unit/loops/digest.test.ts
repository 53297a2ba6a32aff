import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { argumentsDigest, callSignature, canonicalJson, summarizeResult } from "../../../processors/loops/digest.ts";

const mcp = (...texts: string[]) => JSON.stringify({ content: texts.map((text) => ({ type: "text", text })) });
const result = (over: Partial<{ is_error: boolean; content: string | null; content_ref: string | null }>) => ({ is_error: false, content: null, content_ref: null, ...over });

describe("loop watching: digests of arguments and results", () => {
  it("LOOP-1 the arguments digest ignores key order and insignificant whitespace", () => {
    expect(argumentsDigest('{"path":"a.md","page":2}')).toBe(argumentsDigest('{ "page" : 2,\n  "path": "a.md" }'));
    expect(argumentsDigest('{"q":{"b":1,"a":[1,{"y":2,"x":1}]}}')).toBe(argumentsDigest('{"q":{"a":[1,{"x":1,"y":2}],"b":1}}'));
  });

  it("LOOP-1 a changed page number, array order or value type changes the digest", () => {
    expect(argumentsDigest('{"path":"a.md","page":2}')).not.toBe(argumentsDigest('{"path":"a.md","page":3}'));
    expect(argumentsDigest('{"ids":[1,2]}')).not.toBe(argumentsDigest('{"ids":[2,1]}'));
    expect(argumentsDigest('{"page":2}')).not.toBe(argumentsDigest('{"page":"2"}'));
  });

  it("LOOP-1 the signature is the function and the digest: the same arguments to another function differ", () => {
    const call = { plugin: "p", tool: "t", function: "search", arguments: '{"q":"x"}' };
    expect(callSignature(call)).toBe(callSignature({ ...call, arguments: '{ "q": "x" }' }));
    expect(callSignature(call)).not.toBe(callSignature({ ...call, function: "read" }));
    expect(callSignature(call)).not.toBe(callSignature({ ...call, tool: "u" }));
  });

  it("LOOP-1 canonical JSON parses back to the same value and is stable under key shuffles", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const text = canonicalJson(v);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(v)));
      }),
    );
  });

  it("LOOP-1 a result's hash is equal for the same content and differs between an error and a success", () => {
    const a = summarizeResult(result({ content: mcp("found 3") }));
    expect(summarizeResult(result({ content: JSON.stringify({ content: [{ text: "found 3", type: "text" }] }) })).hash).toBe(a.hash);
    expect(summarizeResult(result({ content: mcp("found 4") })).hash).not.toBe(a.hash);
    expect(summarizeResult(result({ is_error: true, content: mcp("found 3") })).hash).not.toBe(a.hash);
    expect(summarizeResult(result({ content_ref: "oz0-file:sha256:ab" })).hash).toBe(summarizeResult(result({ content_ref: "oz0-file:sha256:ab" })).hash);
  });

  it("LOOP-4 empty is no content, no items, blank text or an empty list, unless there is structured content", () => {
    expect(summarizeResult(result({})).empty).toBe(true);
    expect(summarizeResult(result({ content: JSON.stringify({ content: [] }) })).empty).toBe(true);
    expect(summarizeResult(result({ content: mcp("  ", "[]") })).empty).toBe(true);
    expect(summarizeResult(result({ content: mcp("{}") })).empty).toBe(true);
    expect(summarizeResult(result({ content: mcp("0 results") })).empty).toBe(false);
    expect(summarizeResult(result({ content: JSON.stringify({ content: [], structuredContent: { n: 1 } }) })).empty).toBe(false);
    expect(summarizeResult(result({ content_ref: "oz0-file:sha256:ab" })).empty).toBe(false);
  });
});
