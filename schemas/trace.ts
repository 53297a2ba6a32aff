/**
 * A job's trace as the trace sink keeps it and the trace command reads it: its entries and the
 * decisions about it, merged from the sink's parts (`processors/trace-sink/`), formatted for a
 * person by `client/trace-format.ts`. It sits here, below both.
 */
import type { Decision, JobEvent, TraceEntry } from "./types.ts";

export interface JobTrace {
  readonly jobId: string;
  readonly entries: readonly TraceEntry[];
  readonly decisions: readonly Decision[];
  /** The job's start and end (`started`, `ended`), when known. */
  readonly jobs?: readonly JobEvent[];
}
