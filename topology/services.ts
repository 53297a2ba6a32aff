/**
 * The services a command runs against: the environment's endpoints when all are given (or
 * `OZ0_STACK=external`), else the local stack, brought up on first use.
 */
import { endpointsFromEnv, endpointsGiven, type Endpoints } from "../processors/runner/endpoints.ts";
import { ensureLocalStack } from "./stack.ts";

export async function servicesForCommand(): Promise<Endpoints> {
  if (endpointsGiven() || process.env.OZ0_STACK === "external") return endpointsFromEnv();
  return (await ensureLocalStack()).endpoints;
}
