/**
 * The budget and limits processors (LIM-1..LIM-11), and how the pipeline runs them: two
 * processors, one per input topic (`oz0.model-calls`, `oz0.jobs`), sharing one Redis hash per
 * tree (see docs/limits.md).
 */
import type { RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import type { ConfigView } from "../runner/config-table.ts";
import type { LimitsEnv } from "./env.ts";
import { DEFAULT_PRICES, type PriceTable } from "./prices.ts";
import { redisLimitsStore, type RedisLimitsOptions, redisStandingStore, redisUnknownOutcomeStore } from "./redis-store.ts";

export { limitsJobsProcessor } from "./jobs-processor.ts";
export { limitsModelCallsProcessor } from "./model-calls-processor.ts";
export { spendShare } from "./spend.ts";
export { memoryLimitsStore } from "./memory-store.ts";
export { redisLimitsStore } from "./redis-store.ts";
export { DEFAULT_PRICES, priceOf, type PriceTable } from "./prices.ts";
export { loadPrices, pricesFromEnv, PricesFileError } from "./price-file.ts";
export type { LimitsEnv } from "./env.ts";

/** Builds the environment both limits processors share, from the pipeline's connections. */
export function limitsEnv(deps: { redis: RedisClient; config: ConfigView; keys?: Keys; prices?: PriceTable; redisOptions?: RedisLimitsOptions }): LimitsEnv {
  const keys = deps.keys ?? new Keys();
  return { store: redisLimitsStore(deps.redis, keys, deps.redisOptions), config: deps.config, prices: deps.prices ?? DEFAULT_PRICES, standing: redisStandingStore(deps.redis, keys), unknown: redisUnknownOutcomeStore(deps.redis, keys) };
}
