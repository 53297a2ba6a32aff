/**
 * What a runtime needs to offer oz.read_result (OFF-7): whether a job's requests offer it,
 * decided from the agent definitions as the pipeline decides it, and how a call of it is named
 * and shaped. The pipeline answers the call on `oz0.results-delivered` (`awaitDelivered` with
 * the call's event ID).
 */
export { jobAgents, labelsAboveClearance, listsPluginTool, offersReadResult, type AgentLookup } from "../processors/read-result/offered.ts";
export { READ_RESULT, READ_RESULT_INPUT_SCHEMA, READ_RESULT_NAME } from "../processors/read-result/tool.ts";
