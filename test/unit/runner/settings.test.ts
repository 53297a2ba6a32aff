import { describe, expect, it } from "vitest";
import { wholeFromEnv } from "../../../processors/runner/settings.ts";
import { instanceFromEnv } from "../../../processors/runner/transport.ts";

describe("whole-number settings from the environment", () => {
  it("SYS-1 gives the default when unset or blank, the number when in range", () => {
    expect(wholeFromEnv({}, "OZ0_X", 7, 1, 64)).toBe(7);
    expect(wholeFromEnv({ OZ0_X: "  " }, "OZ0_X", 7, 1, 64)).toBe(7);
    expect(wholeFromEnv({ OZ0_X: "1" }, "OZ0_X", 7, 1, 64)).toBe(1);
    expect(wholeFromEnv({ OZ0_X: "64" }, "OZ0_X", 7, 1, 64)).toBe(64);
  });

  it("SYS-1 refuses anything else with the setting's name, its value and its range", () => {
    for (const bad of ["0", "65", "2.5", "ten", "-1"]) {
      expect(() => wholeFromEnv({ OZ0_X: bad }, "OZ0_X", 7, 1, 64)).toThrow(`OZ0_X=${bad} is not a whole number from 1 to 64`);
    }
    expect(() => wholeFromEnv({ OZ0_X: "5" }, "OZ0_X", 7000, 6000, 9000, "milliseconds")).toThrow("OZ0_X=5 is not a whole number of milliseconds from 6000 to 9000");
  });

  it("SYS-1 reads the session timeout through it, with its unit", () => {
    expect(instanceFromEnv({}).sessionTimeoutMs).toBe(30_000);
    expect(instanceFromEnv({ OZ0_KAFKA_SESSION_TIMEOUT_MS: "10000" }).sessionTimeoutMs).toBe(10_000);
    expect(() => instanceFromEnv({ OZ0_KAFKA_SESSION_TIMEOUT_MS: "1000" })).toThrow("OZ0_KAFKA_SESSION_TIMEOUT_MS=1000 is not a whole number of milliseconds from 6000 to 300000");
  });
});
