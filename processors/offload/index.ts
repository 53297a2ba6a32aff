// The offload step (OFF-1, OFF-3..OFF-5, OFF-12): pure decision in ./offload.ts, the store effect in ./apply.ts.
export { decideOffload, MAX_RESULT_JSON_BYTES, OFFLOAD_META_KEY, resultJsonBytes, resultText, stubOf, type OffloadDecision, type OffloadInput, type OffloadStub } from "./offload.ts";
export { offloadResult, type OffloadCall, type OffloadEnv, type Offloaded } from "./apply.ts";
