import { describe, expect, it } from "vitest";
import { ReplyError } from "ioredis";
import { StoreRefused, TransientError, isRetriable } from "../../../processors/runner/errors.ts";
import { minioFailure, minioFailureKind } from "../../../store/minio-errors.ts";
import { redisFailure, redisFailureKind, replyCode } from "../../../store/redis/errors.ts";

// ioredis types ReplyError as any; it is the class of every error reply of the server.
const Reply = ReplyError as new (message: string) => Error;
const reply = (message: string): Error => new Reply(message);
const coded = (code: string, message = "the server said so"): Error => Object.assign(new Error(message), { code });

describe("Redis failures classified by what the server said", () => {
  it("SYS-3 no answer at all and a server that cannot serve for now are transient", () => {
    for (const err of [
      new Error("Connection is closed."),
      new Error("Command timed out"),
      coded("ECONNREFUSED", "connect ECONNREFUSED 127.0.0.1:1"),
      Object.assign(new Error("Reached the max retries per request limit (which is 0)."), { name: "MaxRetriesPerRequestError" }),
      reply("LOADING Redis is loading the dataset in memory"),
      reply("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."),
      reply("TRYAGAIN Multiple keys request during rehashing of slot"),
      reply("CLUSTERDOWN The cluster is down"),
      reply("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."),
      reply("READONLY You can't write against a read only replica."),
      reply("OOM command not allowed when used memory > 'maxmemory'."),
      reply("OOM command not allowed when used memory > 'maxmemory'. script: 2bab3b, on @user_script:1."),
      reply("NOSCRIPT No matching script. Please use EVAL."),
      reply("NOAUTH Authentication required."),
      reply("ERR max number of clients reached"),
    ]) {
      expect(redisFailureKind(err), err.message).toBe("transient");
      const f = redisFailure(err, "reading tree t", "oz0:{tree:a/t}:limits");
      expect(f).toBeInstanceOf(TransientError);
      expect(isRetriable(f)).toBe(true);
      expect((f as TransientError).dependency).toBe("redis");
    }
  });

  it("SYS-3 a wrong kind of key, a script's own error and refused arguments are permanent, with the server's words and the key", () => {
    for (const err of [
      reply("WRONGTYPE Operation against a key holding the wrong kind of value"),
      reply("WRONGTYPE Operation against a key holding the wrong kind of value script: 9cd9f6, on @user_script:1."),
      reply("limitsTreeSteps: step 1 is nope, not ask, usage or rewarm"),
      reply("ERR user_script:1: boom script: 82903a, on @user_script:1."),
      reply("ERR wrong number of arguments for 'hset' command"),
      reply("ERR value is not an integer or out of range"),
      reply("NOPERM this user has no permissions to access one of the keys used as arguments"),
    ]) {
      expect(redisFailureKind(err), err.message).toBe("permanent");
      const f = redisFailure(err, "running limitsTreeSteps for tree t", "oz0:{tree:a/t}:limits");
      expect(f).toBeInstanceOf(StoreRefused);
      expect(isRetriable(f)).toBe(false);
      expect(f.message).toContain(err.message);
      expect(f.message).toContain("on key oz0:{tree:a/t}:limits");
      expect((f as StoreRefused).key).toBe("oz0:{tree:a/t}:limits");
      expect((f as StoreRefused).server).toBe(err.message);
    }
    expect(redisFailure(reply("WRONGTYPE Operation against a key holding the wrong kind of value"), "reading tree t", "k").message).toContain("TYPE k shows what it holds");
  });

  it("SYS-3 an error already classified passes as it is", () => {
    const t = new TransientError("x");
    const r = new StoreRefused("y", { dependency: "redis", server: "y" });
    expect(redisFailure(t, "w")).toBe(t);
    expect(redisFailure(r, "w")).toBe(r);
  });

  it("SYS-3 reads the code an error reply opens with", () => {
    expect(replyCode("WRONGTYPE Operation")).toBe("WRONGTYPE");
    expect(replyCode("ERR user_script:1: boom")).toBe("ERR");
    expect(replyCode("limitsTreeSteps: step 1")).toBe("");
  });
});

describe("MinIO failures classified by what the server said", () => {
  it("SYS-2 no answer, server errors and throttling are transient", () => {
    for (const code of ["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "InternalError", "ServiceUnavailable", "SlowDown", "XMinioServerNotInitialized", "XMinioStorageFull", "RequestTimeout"]) {
      expect(minioFailureKind(coded(code)), code).toBe("transient");
      const f = minioFailure(coded(code), "store a file", "bucket b");
      expect(f).toBeInstanceOf(TransientError);
      expect((f as TransientError).dependency).toBe("minio");
    }
  });

  it("SYS-2 AccessDenied and NoSuchBucket are permanent, with the server's words and the bucket", () => {
    for (const code of ["AccessDenied", "NoSuchBucket", "InvalidBucketName"]) {
      expect(minioFailureKind(coded(code)), code).toBe("permanent");
      const f = minioFailure(coded(code, "Access Denied."), "store a file", "bucket b") as StoreRefused;
      expect(f).toBeInstanceOf(StoreRefused);
      expect(f.message).toContain(`${code}: Access Denied.`);
      expect(f.message).toContain("on bucket b");
      expect(f.key).toBe("bucket b");
    }
  });

  it("SYS-2 a status the client tried again and gave up on (429, 503: no code left) is transient, naming the status", () => {
    for (const status of [408, 429, 500, 503]) {
      const err = new Error(`Request failed after 1 retries: Error: Retryable HTTP status: ${status}`);
      expect(minioFailureKind(err), String(status)).toBe("transient");
      const f = minioFailure(err, "store a file", "bucket b") as TransientError;
      expect(f).toBeInstanceOf(TransientError);
      expect(f.message).toContain(`HTTP ${status}`);
    }
  });

  it("SYS-2 an error MinIO did not give (no code) is left as it is", () => {
    const err = new Error("a label is a non-empty string");
    expect(minioFailureKind(err)).toBeUndefined();
    expect(minioFailure(err, "store a file")).toBe(err);
  });
});
