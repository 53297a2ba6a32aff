import { describe, expect, it } from "vitest";
import { machineBusySeconds, redisCpuSeconds, spentBetween, type CpuSample } from "../../../bench/pipeline/cpu.ts";

describe("the pipeline bench's CPU accounting", () => {
  it("SYS-3 SYS-4 counts every busy field of /proc/stat's first line but idle and iowait, in seconds of USER_HZ", () => {
    // user nice system idle iowait irq softirq steal guest guest_nice
    const stat = "cpu  1000 20 300 90000 500 7 13 60 0 0\ncpu0 500 10 150 45000 250 3 6 30 0 0\n";
    expect(machineBusySeconds(() => stat)).toBeCloseTo((1000 + 20 + 300 + 7 + 13 + 60) / 100, 6);
  });

  it("SYS-3 SYS-4 gives no machine figure where /proc/stat cannot be read or says something else", () => {
    expect(
      machineBusySeconds(() => {
        throw new Error("ENOENT");
      }),
    ).toBeNull();
    expect(machineBusySeconds(() => "intr 1 2 3\n")).toBeNull();
    expect(machineBusySeconds(() => "cpu 1 2 x 4 5 6 7 8\n")).toBeNull();
  });

  it("SYS-3 SYS-4 adds Redis's own and its children's user and system CPU from INFO cpu", () => {
    const info = "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:0.125000\r\nused_cpu_user_children:0.125000\r\nused_cpu_sys_main_thread:1.4\r\n";
    expect(redisCpuSeconds(info)).toBeCloseTo(4, 6);
    expect(redisCpuSeconds("# Server\r\nredis_version:7.0.15\r\n")).toBeNull();
  });

  it("SYS-3 SYS-4 reads a window's CPU between samples by linear interpolation", () => {
    const samples: CpuSample[] = [
      { at: 1_000, machine: 10, process: 1, redis: 5 },
      { at: 2_000, machine: 12, process: 2, redis: 5.5 },
      { at: 3_000, machine: 16, process: 2.5, redis: null },
    ];
    const spent = spentBetween(samples, 1_500, 2_500);
    expect(spent.machine).toBeCloseTo(14 - 11, 6);
    expect(spent.process).toBeCloseTo(2.25 - 1.5, 6);
    // A window that ends where Redis did not answer has no Redis figure.
    expect(spent.redis).toBeNull();
    expect(spentBetween(samples, 1_000, 2_000).redis).toBeCloseTo(0.5, 6);
    // Past the last sample, the last one holds.
    expect(spentBetween(samples, 2_000, 9_000).machine).toBeCloseTo(4, 6);
  });
});
