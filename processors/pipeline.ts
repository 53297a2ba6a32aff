/**
 * The processors `npm start` runs, each with how to build the environment its core needs from
 * the shared connections: declared in `topology/pipeline.ts`, with the applications they run in.
 */
export { entry, PIPELINE, type PipelineDeps, type PipelineEntry } from "../topology/pipeline.ts";
