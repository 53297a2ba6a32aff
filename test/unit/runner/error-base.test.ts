import { describe, expect, it } from "vitest";
import { AuditLogConflict, AuditLogNotLocked } from "../../../processors/audit-sink/store.ts";
import { InvalidInput, Oz0Error, StoreRefused, TransientError, dependencyOf, isRetriable } from "../../../lib/errors.ts";
import { DecodeError, RegistryUnavailable } from "../../../schemas/serde.ts";
import { FileNotFound, FileTooLarge } from "../../../store/file-errors.ts";
import { SealError } from "../../../store/payload-keys.ts";
import { TreeBeingErased } from "../../../store/tree-holds.ts";
import { UnknownTree } from "../../../store/tree-data.ts";
import { NoAnswer } from "../../../client/runtime-client.ts";
import { ConfigError } from "../../../config/errors.ts";
import { TopologyError } from "../../../processors/runner/processor.ts";

describe("one error base: Oz0Error carries retriable and dependency", () => {
  const cases: Array<[Error, string, boolean, string | undefined]> = [
    [new InvalidInput("bad"), "InvalidInput", false, undefined],
    [new TransientError("down", { dependency: "minio" }), "TransientError", true, "minio"],
    [new StoreRefused("refused", { dependency: "redis", key: "k", server: "WRONGTYPE" }), "StoreRefused", false, "redis"],
    [new DecodeError("undecodable", "no magic byte"), "DecodeError", false, undefined],
    [new RegistryUnavailable("no registry"), "RegistryUnavailable", true, "registry"],
    [new FileNotFound("oz0://f"), "FileNotFound", false, undefined],
    [new FileTooLarge(2, 1), "FileTooLarge", false, undefined],
    [new SealError("damaged"), "SealError", false, undefined],
    [new AuditLogNotLocked("b"), "AuditLogNotLocked", false, undefined],
    [new AuditLogConflict("b", "n", 1), "AuditLogConflict", false, undefined],
    [new NoAnswer("admission", "evt-1", 10), "NoAnswer", true, undefined],
    [new ConfigError({ path: "p", field: "f", reason: "r" }), "ConfigError", false, undefined],
    [new TopologyError("t"), "TopologyError", false, undefined],
    [new UnknownTree("acme", "t1"), "Error", false, undefined],
    [new TreeBeingErased("acme", "t1", "ops\n1"), "Error", false, undefined],
  ];
  it.each(cases)("%s is an Oz0Error with its name, retriable flag and dependency", (err, name, retriable, dependency) => {
    expect(err).toBeInstanceOf(Oz0Error);
    expect(err.name).toBe(name);
    expect(isRetriable(err)).toBe(retriable);
    expect(dependencyOf(err)).toBe(dependency);
  });

  it("an error outside the base is never retriable, whatever fields it carries", () => {
    const duck = Object.assign(new Error("looks retriable"), { retriable: true, dependency: "redis" });
    expect(isRetriable(duck)).toBe(false);
    expect(dependencyOf(duck)).toBeUndefined();
    const named = Object.assign(new Error("named like the registry's"), { name: "RegistryUnavailable" });
    expect(dependencyOf(named)).toBeUndefined();
  });

  it("keeps the cause only when one is given", () => {
    expect("cause" in new TransientError("x")).toBe(false);
    expect(new TransientError("x", { cause: "y" }).cause).toBe("y");
    expect(new StoreRefused("x", { dependency: "redis", server: "s", cause: 1 }).cause).toBe(1);
  });
});
