/** Types of bin/patch-kafkajs.mjs, for the tests that import it. */
export declare const FILE: string;
export declare const ORIGINAL: string;
export declare const LINEAR: string;
export declare function patch(file?: string): string;
export declare const EOS_FILE: string;
export declare const EOS_EDITS: ReadonlyArray<readonly [string, string]>;
export declare function patchCoordinators(file?: string): string;
export declare const QUEUE_FILE: string;
export declare const QUEUE_EDITS: ReadonlyArray<readonly [string, string]>;
export declare function patchRequestQueue(file?: string): string;
