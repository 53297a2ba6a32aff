import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startPipeline } from "../../../topology/run.ts";
import { parsePrices, usdPerMtokToMicros, type PricesFile } from "../../../config/prices.ts";
import type { LimitsEnv } from "../../../processors/limits/env.ts";
import { memoryLimitsStore } from "../../../processors/limits/memory-store.ts";
import { limitsJobsProcessor } from "../../../processors/limits/jobs-processor.ts";
import { limitsModelCallsProcessor } from "../../../processors/limits/model-calls-processor.ts";
import { costMicros } from "../../../processors/limits/money.ts";
import { applyPrices, loadPrices, PricesFileError, pricesFromEnv } from "../../../processors/limits/price-file.ts";
import { DEFAULT_PRICES, entryOf, highestPrice, priceOf, type PriceTable } from "../../../processors/limits/prices.ts";
import { PIPELINE, type PipelineDeps } from "../../../processors/pipeline.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { createLogger } from "../../../processors/runner/log.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { Decision } from "../../../schemas/types.ts";
import { uid } from "../../support/events.ts";
import { agent, jobEvent, modelCall, tenantSettings, usageOf } from "./support.ts";

const GOOD = `
# What we pay, as of our contract.
models:
  gpt-4o:
    input_usd_per_mtok: 2.5
    output_usd_per_mtok: 10
    cache_read_usd_per_mtok: 1.25
    cache_write_usd_per_mtok: 0
    max_output_tokens: 16384
  acme-llm-70b:
    input_usd_per_mtok: 0.075
    output_usd_per_mtok: 0.3
    cache_read_usd_per_mtok: 0.0075
    cache_write_usd_per_mtok: 0.1
    max_output_tokens: 8k
`;

function parsed(text: string): PricesFile {
  const p = parsePrices(text, "prices.yaml");
  if (!p.ok) throw new Error(p.errors.map((e) => e.message).join("\n"));
  return p.value;
}

function errors(text: string): string[] {
  const p = parsePrices(text, "prices.yaml");
  if (p.ok) throw new Error("expected the file to be refused");
  return p.errors.map((e) => e.message);
}

const model = (fields: string): string => `models:\n  m:\n${fields.split("\n").map((l) => `    ${l}`).join("\n")}\n`;
const FULL = "input_usd_per_mtok: 1\noutput_usd_per_mtok: 2\ncache_read_usd_per_mtok: 0.1\ncache_write_usd_per_mtok: 1.25\nmax_output_tokens: 1000";

describe("prices: the default table", () => {
  it("LIM-7 the platform's three models keep their prices; OpenAI's are listed beside Anthropic's with no cache write", () => {
    expect(DEFAULT_PRICES["claude-opus-4"]).toEqual({ input: 15_000_000, output: 75_000_000, cache_read: 1_500_000, cache_write: 18_750_000, max_output_tokens: 32_000 });
    expect(DEFAULT_PRICES["claude-sonnet-4"]).toEqual({ input: 3_000_000, output: 15_000_000, cache_read: 300_000, cache_write: 3_750_000, max_output_tokens: 64_000 });
    expect(DEFAULT_PRICES["claude-haiku-3.5"]).toEqual({ input: 800_000, output: 4_000_000, cache_read: 80_000, cache_write: 1_000_000, max_output_tokens: 8_192 });
    for (const name of ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "o3", "o4-mini", "gpt-5", "gpt-5-mini", "gpt-5-nano"]) {
      expect(DEFAULT_PRICES[name]?.cache_write, name).toBe(0);
      expect(DEFAULT_PRICES[name]?.cache_read, name).toBeLessThan(DEFAULT_PRICES[name]?.input ?? 0);
    }
    expect(DEFAULT_PRICES["gpt-4o"]).toEqual({ input: 2_500_000, output: 10_000_000, cache_read: 1_250_000, cache_write: 0, max_output_tokens: 16_384 });
    for (const [name, p] of Object.entries(DEFAULT_PRICES)) {
      for (const v of Object.values(p)) expect(Number.isSafeInteger(v) && v >= 0, name).toBe(true);
    }
  });

  it("LIM-7 an unpriced model is held to the table's highest price of each kind: opus-4's prices, and the longest output listed", () => {
    const unknown = priceOf(DEFAULT_PRICES, "mystery-model");
    expect(unknown).toMatchObject({ listed: false, entry: null });
    // Input, output and cache write as before the OpenAI models were added; the worst case of a
    // call that names no cap is now the longest answer any listed model gives (128k, GPT-5's).
    expect(unknown.price).toEqual({ input: 15_000_000, output: 75_000_000, cache_read: 5_000_000, cache_write: 18_750_000, max_output_tokens: 128_000 });
    expect(highestPrice({ a: { input: 1, output: 9, cache_read: 0, cache_write: 4, max_output_tokens: 10 }, b: { input: 3, output: 2, cache_read: 1, cache_write: 0, max_output_tokens: 5 } })).toEqual({ input: 3, output: 9, cache_read: 1, cache_write: 4, max_output_tokens: 10 });
    expect(() => priceOf({}, "gpt-4o")).toThrow(/price table is empty/);
  });

  it("LIM-7 a provider's dated snapshot is priced as its model: the longest listed name followed by a date", () => {
    expect(entryOf(DEFAULT_PRICES, "gpt-4o-2024-08-06")).toBe("gpt-4o");
    expect(entryOf(DEFAULT_PRICES, "gpt-4o-mini-2024-07-18")).toBe("gpt-4o-mini");
    expect(entryOf(DEFAULT_PRICES, "claude-sonnet-4-20250514")).toBe("claude-sonnet-4");
    expect(entryOf(DEFAULT_PRICES, "claude-opus-4-1-20250805")).toBe("claude-opus-4-1");
    expect(entryOf(DEFAULT_PRICES, "claude-3-5-haiku-20241022")).toBe("claude-3-5-haiku");
    expect(entryOf(DEFAULT_PRICES, "o3-2025-04-16")).toBe("o3");
    // A snapshot with its own entry is priced by it, not by its model's.
    expect(priceOf(DEFAULT_PRICES, "gpt-4o-2024-05-13").price.input).toBe(5_000_000);
    expect(priceOf(DEFAULT_PRICES, "gpt-4o-2024-08-06")).toMatchObject({ listed: true, entry: "gpt-4o", price: { input: 2_500_000 } });
    // Anything but a date after the name is another model: held to the highest price.
    for (const other of ["gpt-4o-audio-preview", "gpt-4o-2024", "gpt-4o-20240806x", "gpt-4o2024-08-06", "claude-opus-4-9-20300101", "claude-sonnet-4-latest", "xgpt-4o-2024-08-06"]) {
      expect(priceOf(DEFAULT_PRICES, other), other).toMatchObject({ listed: false, entry: null });
    }
  });
});

describe("prices: the operator's file", () => {
  it("LIM-7 US dollars per million tokens become whole micro-dollars exactly, with no float drift", () => {
    const cases: Array<[number, number]> = [[2.5, 2_500_000], [0.1, 100_000], [0.075, 75_000], [0.3, 300_000], [1.1, 1_100_000], [0.000001, 1], [0, 0], [18.75, 18_750_000], [0.0075, 7_500], [123.456789, 123_456_789], [0.29, 290_000], [4.35, 4_350_000]];
    for (const [usd, micros] of cases) expect(usdPerMtokToMicros(usd), String(usd)).toEqual({ ok: true, value: micros });
    const refused = (usd: number): string => {
      const r = usdPerMtokToMicros(usd);
      return r.ok ? `accepted as ${r.value}` : r.reason;
    };
    expect(refused(0.0000001)).toMatch(/finer than a micro-dollar/);
    expect(refused(1.0000001)).toMatch(/at most 6 decimal places/);
    expect(refused(-1)).toMatch(/at least 0/);
    expect(refused(15_000_000)).toMatch(/not micro-dollars/);
    expect(usdPerMtokToMicros(Number.NaN)).toMatchObject({ ok: false });
  });

  it("LIM-7 a good file: each model's five fields, counts written as counts, added to the default table by default", () => {
    const file = parsed(GOOD);
    expect(file.replace).toBe(false);
    expect(file.models).toEqual({
      "gpt-4o": { input: 2_500_000, output: 10_000_000, cache_read: 1_250_000, cache_write: 0, max_output_tokens: 16_384 },
      "acme-llm-70b": { input: 75_000, output: 300_000, cache_read: 7_500, cache_write: 100_000, max_output_tokens: 8_000 },
    });
    const table = applyPrices(file);
    expect(table["acme-llm-70b"]?.output).toBe(300_000);
    expect(table["claude-sonnet-4"]).toEqual(DEFAULT_PRICES["claude-sonnet-4"]);
    expect(Object.keys(table).length).toBe(Object.keys(DEFAULT_PRICES).length + 1);
  });

  it("LIM-7 add (the default) overrides the default's entry of the same name; replace: true makes the file's models the whole table", () => {
    const cheaper = `models:\n  claude-sonnet-4: {input_usd_per_mtok: 2, output_usd_per_mtok: 10, cache_read_usd_per_mtok: 0.2, cache_write_usd_per_mtok: 2.5, max_output_tokens: 64k}\n`;
    const added = applyPrices(parsed(cheaper));
    expect(added["claude-sonnet-4"]).toEqual({ input: 2_000_000, output: 10_000_000, cache_read: 200_000, cache_write: 2_500_000, max_output_tokens: 64_000 });
    expect(added["claude-opus-4"]).toEqual(DEFAULT_PRICES["claude-opus-4"]);
    expect(DEFAULT_PRICES["claude-sonnet-4"]?.input).toBe(3_000_000);

    const replaced = applyPrices(parsed(`replace: true\n${cheaper}`));
    expect(Object.keys(replaced)).toEqual(["claude-sonnet-4"]);
    // With the file alone, a model it does not list is held to the file's highest prices.
    expect(priceOf(replaced, "gpt-4o")).toMatchObject({ listed: false, price: { input: 2_000_000, output: 10_000_000 } });
    expect(parsed(`replace: false\n${cheaper}`).replace).toBe(false);
  });

  it("LIM-7 an unknown field is refused with its name, line and the field meant", () => {
    expect(errors(model(`${FULL}\ninput_usd_per_mtokens: 3`))).toEqual(['prices.yaml:8: models.m.input_usd_per_mtokens: unknown key "input_usd_per_mtokens"; did you mean "input_usd_per_mtok"?']);
    expect(errors(`prices:\n  m: {}\n`)[0]).toMatch(/^prices\.yaml:1: prices: unknown key "prices"; at the top the keys are replace, models/);
    expect(errors(`input_usd_per_mtok: 3\nmodels: {}\n`)[0]).toMatch(/input_usd_per_mtok: unknown key "input_usd_per_mtok" here; it belongs under models\.<model name>/);
  });

  it("LIM-7 a negative price, a price that is not a number and a missing field are each refused, all in one pass", () => {
    const e = errors(`models:\n  a:\n    input_usd_per_mtok: -1\n    output_usd_per_mtok: "ten"\n    cache_read_usd_per_mtok: 0.1\n    cache_write_usd_per_mtok: 0\n  b:\n    input_usd_per_mtok: 1\n    output_usd_per_mtok: 2\n    cache_read_usd_per_mtok: 0.1\n    cache_write_usd_per_mtok: 0\n    max_output_tokens: 0\n`);
    expect(e).toEqual([
      "prices.yaml:2: models.a.max_output_tokens: is required: the most one request of the model can answer, in tokens, such as 16384 or 64k (the worst case of a call that sets no cap)",
      "prices.yaml:3: models.a.input_usd_per_mtok: expected a price of at least 0 US dollars per million tokens; got -1",
      'prices.yaml:4: models.a.output_usd_per_mtok: expected the price of output tokens in US dollars per million tokens as a number, such as 2.5; got the text "ten"',
      "prices.yaml:12: models.b.max_output_tokens: expected a whole number of at least 1 (the most one request of the model can answer, in tokens); got 0",
    ]);
    expect(errors(model(FULL.replace("cache_write_usd_per_mtok: 1.25", "cache_write_usd_per_mtok: 0.00000001")))[0]).toMatch(/cache_write_usd_per_mtok: 1e-8 is finer than a micro-dollar/);
    expect(errors(model(FULL.replace("output_usd_per_mtok: 2", "output_usd_per_mtok: 75000000")))[0]).toMatch(/output_usd_per_mtok: 75000000 US dollars per million tokens is above .*not micro-dollars/);
  });

  it("LIM-7 a file that is empty, not YAML, without models, or replacing with nothing is refused", () => {
    expect(errors("")[0]).toMatch(/the file is empty/);
    expect(errors("models: [\n")[0]).toMatch(/^prices\.yaml:\d+: /);
    expect(errors("replace: true\n")[0]).toMatch(/models: is required/);
    expect(errors("replace: true\nmodels: {}\n")[0]).toMatch(/replace: true would leave no price at all/);
    expect(errors("replace: yes please\nmodels: {}\n")[0]).toMatch(/replace: expected true or false/);
    expect(errors("models:\n  gpt 4o: {}\n")[0]).toMatch(/"gpt 4o" is not a model name/);
    expect(errors("models:\n  m: 3\n")[0]).toMatch(/models\.m: expected a mapping of input_usd_per_mtok/);
  });
});

describe("prices: OZ0_PRICES", () => {
  let dir = "";
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "oz0-prices-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("LIM-7 unset or blank is the default table; a file is read, merged and frozen", async () => {
    expect(await pricesFromEnv({})).toBe(DEFAULT_PRICES);
    expect(await pricesFromEnv({ OZ0_PRICES: "  " })).toBe(DEFAULT_PRICES);
    const path = join(dir, "prices.yaml");
    await writeFile(path, GOOD);
    const table = await pricesFromEnv({ OZ0_PRICES: path });
    expect(table["acme-llm-70b"]?.input).toBe(75_000);
    expect(table["claude-opus-4"]).toEqual(DEFAULT_PRICES["claude-opus-4"]);
    expect(Object.isFrozen(table)).toBe(true);
  });

  it("LIM-7 a bad or missing file stops the start with every error, naming the variable, the file and each field", async () => {
    const path = join(dir, "bad.yaml");
    await writeFile(path, model(FULL.replace("input_usd_per_mtok: 1", "input_usd_per_mtok: -2").replace("output_usd_per_mtok: 2", 'output_usd_per_mtok: "2"')));
    const err = await pricesFromEnv({ OZ0_PRICES: path }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PricesFileError);
    const message = (err as Error).message;
    expect(message).toContain(`OZ0_PRICES=${path} cannot be used`);
    expect(message).toContain(`${path}:4: models.m.output_usd_per_mtok: expected the price of output tokens`);
    expect(message).toMatch(/models\.m\.input_usd_per_mtok: expected a price of at least 0/);
    expect((err as PricesFileError).errors).toHaveLength(2);
    await expect(loadPrices(join(dir, "nowhere.yaml"))).rejects.toThrow(/nowhere\.yaml: no such file/);
  });

  it("LIM-7 startPipeline refuses to start with an invalid prices file, before it connects to anything", async () => {
    const path = join(dir, "negative.yaml");
    await writeFile(path, model(FULL.replace("output_usd_per_mtok: 2", "output_usd_per_mtok: -2")));
    const before = process.env.OZ0_PRICES;
    process.env.OZ0_PRICES = path;
    try {
      // Nothing listens at these: a start that went past the prices would fail on Kafka instead.
      const nowhere = { kafkaBrokers: ["127.0.0.1:1"], registryUrl: "http://127.0.0.1:1", redisUrl: "redis://127.0.0.1:1", minioUrl: "http://127.0.0.1:1", minioAccessKey: "x", minioSecretKey: "x" };
      const err = await startPipeline(nowhere, createLogger({ component: "test" }, () => {})).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PricesFileError);
      expect((err as Error).message).toMatch(/models\.m\.output_usd_per_mtok: expected a price of at least 0 US dollars per million tokens; got -2/);
    } finally {
      if (before === undefined) delete process.env.OZ0_PRICES;
      else process.env.OZ0_PRICES = before;
    }
  });
});

describe("prices: the pipeline", () => {
  it("LIM-7 both limits processors of the pipeline price with the one table the pipeline was given, else the default", async () => {
    const table = applyPrices(parsed(GOOD));
    // Building a limits environment connects nothing: the Redis client is only kept.
    const deps = { endpoints: {}, redis: {}, config: staticConfig([]), files: {} } as unknown as PipelineDeps;
    const limits = PIPELINE.filter((e) => e.processor.name.startsWith("limits-"));
    expect(limits.map((e) => e.processor.name).sort()).toEqual(["limits-jobs", "limits-model-calls"]);
    for (const e of limits) {
      expect(((await e.env({ ...deps, prices: table })) as LimitsEnv).prices, e.processor.name).toBe(table);
      expect(((await e.env(deps)) as LimitsEnv).prices, e.processor.name).toBe(DEFAULT_PRICES);
    }
  });
});

describe("prices: limits-model-calls with an operator's prices", () => {
  function driver(prices: PriceTable) {
    const boss = agent("boss", { limits: { tree: {}, max_cost_usd: 1 } });
    const config = staticConfig([{ kind: "tenant", id: "acme", value: tenantSettings() }, { kind: "agent", id: boss.name, value: boss }]);
    const env: LimitsEnv = { store: memoryLimitsStore(), config, prices };
    return { calls: new TestDriver(limitsModelCallsProcessor, env), jobs: new TestDriver(limitsJobsProcessor, env) };
  }

  it("LIM-7 an ask of a configured model reserves its worst case at the configured price, and its usage is spent at it", async () => {
    const prices = applyPrices(parsed(GOOD));
    const { calls, jobs } = driver(prices);
    const tree = uid("tree");
    await jobs.pipe(jobEvent(tree), { key: tree });
    // 10,000 in and at most 2,000 out at $0.075 / $0.30: 750 + 600 = 1,350 micro-dollars.
    const ask = modelCall(tree, { model: "acme-llm-70b", input_tokens: 10_000, max_output_tokens: 2_000 });
    await calls.pipe(ask, { key: tree });
    const decided = calls.read<Decision>("oz0.admissions").at(-1);
    expect(decided).toMatchObject({ verdict: "allow" });
    expect(decided?.numbers).toMatchObject({ worst_usd: 0.00135, reserved_usd: 0.00135 });
    expect(decided?.numbers.unpriced_model).toBeUndefined();
    // 1,000 out: 750 + 300 = 1,050 micro-dollars spent, the reservation released.
    await calls.pipe(usageOf(ask, 1_000), { key: tree });
    await calls.pipe(modelCall(tree, { model: "acme-llm-70b", input_tokens: 0, max_output_tokens: 1 }), { key: tree });
    expect(calls.read<Decision>("oz0.admissions").at(-1)?.numbers).toMatchObject({ spent_usd: 0.00105 });
    expect(costMicros(priceOf(prices, "acme-llm-70b").price, { input: 10_000, output: 1_000, cacheRead: 0, cacheWrite: 0 })).toBe(1_050);
  });

  it("LIM-7 with the default table the same ask is of a model nobody priced: held to the highest price and marked unpriced_model", async () => {
    const { calls, jobs } = driver(DEFAULT_PRICES);
    const tree = uid("tree");
    await jobs.pipe(jobEvent(tree), { key: tree });
    await calls.pipe(modelCall(tree, { model: "acme-llm-70b", input_tokens: 10_000, max_output_tokens: 2_000 }), { key: tree });
    // 10,000 at $15 + 2,000 at $75 = 0.15 + 0.15.
    expect(calls.read<Decision>("oz0.admissions").at(-1)?.numbers).toMatchObject({ worst_usd: 0.3, unpriced_model: 1 });
  });

  it("LIM-7 a dated snapshot of a listed model is priced as the model, not held to the highest price", async () => {
    const { calls, jobs } = driver(DEFAULT_PRICES);
    const tree = uid("tree");
    await jobs.pipe(jobEvent(tree), { key: tree });
    await calls.pipe(modelCall(tree, { model: "claude-sonnet-4-20250514" }), { key: tree });
    const numbers = calls.read<Decision>("oz0.admissions").at(-1)?.numbers;
    expect(numbers).toMatchObject({ worst_usd: 0.018 });
    expect(numbers?.unpriced_model).toBeUndefined();
  });
});
