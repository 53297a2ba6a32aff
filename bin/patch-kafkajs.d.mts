/** Types of bin/patch-kafkajs.mjs, for the tests that import it. */
export declare const FILE: string;
export declare const ORIGINAL: string;
export declare const LINEAR: string;
export declare function patch(file?: string): string;
