/**
 * The errors a processor core may throw, and what the runner does with each: defined in
 * `lib/errors.ts` on the one base every oz0 error extends (Oz0Error, with `retriable` and
 * `dependency`), and named here for the processors that import them beside the runner.
 */
export { type Dependency, InvalidInput, Oz0Error, StoreRefused, TransientError, dependencyOf, isRetriable, messageOf } from "../../lib/errors.ts";
