// The fit library: results fitted to a budget (FIT-1..FIT-13, FIT-18). Pure, no I/O.
// Types are in ./types.ts; what the offload step needs (OFF-4, OFF-5) is in ./outline.ts.
export { count, weigh } from "./count.ts";
export { fit, fitDiff, fitDocument, fitRead, readForFit } from "./fit.ts";
export type { Doc } from "./doc.ts";
export { CAP, CAP_CHARS, charsOf, META_KEY, wanted } from "./limits.ts";
