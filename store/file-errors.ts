/**
 * Errors of the file store (`store/files.ts`). Each says what happened and whether trying
 * again can help (`retriable`), as the runner's errors do.
 */
import { Oz0Error } from "../lib/errors.ts";

/**
 * The reader may not read this ref. Thrown alike for a file never stored, one another tree
 * stored, and one of another tenant (FILE-2, OFF-8): the message names only the ref the
 * caller gave, so nothing tells the cases apart.
 */
export class FileNotFound extends Oz0Error {
  readonly ref: string;
  constructor(ref: string) {
    super(`${ref} is not a file this job may read: not found`, { retriable: false });
    this.name = "FileNotFound";
    this.ref = ref;
  }
}

/** A file above the most one stored file may hold (OFF-2, FILE-6); refused before anything is written. */
export class FileTooLarge extends Oz0Error {
  readonly size: number;
  readonly limit: number;
  constructor(size: number, limit: number) {
    super(`a stored file holds at most ${limit} bytes (32 MiB); this one has ${size} bytes (${size - limit} too many): keep a smaller result or split it`, { retriable: false });
    this.name = "FileTooLarge";
    this.size = size;
    this.limit = limit;
  }
}
