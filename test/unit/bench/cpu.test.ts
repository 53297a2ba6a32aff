import { describe, expect, it } from "vitest";
import { exposedCpuSeconds, machineBusySeconds, metricsReading, redisCpuSeconds, spentBetween, type CpuSample } from "../../../bench/pipeline/cpu.ts";
import { pipelineFamilies } from "../../../processors/ops/ops-metrics.ts";
import { MetricsRegistry } from "../../../processors/ops/metrics.ts";
import { withLocalServer } from "../../support/local-http.ts";

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

  it("SYS-3 SYS-4 reads each other process's CPU in a window as its own figure, none where a sample could not read it", () => {
    const samples: CpuSample[] = [
      { at: 1_000, machine: 10, process: 1, redis: null, others: { MinIO: 3, "the pipeline's process": 7 } },
      { at: 2_000, machine: 12, process: 2, redis: null, others: { MinIO: 4, "the pipeline's process": null } },
      { at: 3_000, machine: 16, process: 2.5, redis: null, others: { MinIO: 6, "the pipeline's process": 9 } },
    ];
    expect(spentBetween(samples, 1_000, 3_000).others.MinIO).toBeCloseTo(3, 6);
    expect(spentBetween(samples, 1_000, 3_000).others["the pipeline's process"]).toBeCloseTo(2, 6);
    expect(spentBetween(samples, 1_500, 2_500).others["the pipeline's process"]).toBeNull();
    expect(spentBetween([{ at: 1, machine: 1, process: 1, redis: null }], 1, 2).others).toEqual({});
  });

  it("SYS-3 SYS-4 a pipeline's metrics export its process's CPU seconds, which the load reads from them", async () => {
    // The pipeline's registry, as ops.ts builds it: prom-client's default metrics beside its families.
    const metrics = new MetricsRegistry();
    metrics.add(() => pipelineFamilies({ processors: [], lag: () => 0 }));
    const text = await metrics.render();
    const cpu = exposedCpuSeconds(text);
    const { user, system } = process.cpuUsage();
    expect(cpu).not.toBeNull();
    expect(cpu!).toBeGreaterThan(0);
    expect(cpu!).toBeLessThanOrEqual((user + system) / 1e6);
    expect(text).toMatch(/^# TYPE process_cpu_seconds_total counter$/m);
    expect(exposedCpuSeconds("process_cpu_seconds_total_other 3\nup 1\n")).toBeNull();
    expect(exposedCpuSeconds('process_cpu_seconds_total{instance="a"} 12.5\n')).toBe(12.5);
    // Over HTTP, as the load asks a pipeline elsewhere; null when nothing answers.
    const asked: string[] = [];
    const base = await withLocalServer(
      (req, res) => {
        asked.push(req.url ?? "");
        res.end("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 42.25\n");
      },
      async (url) => {
        expect(await metricsReading(`${url}/metrics`)()).toBe(42.25);
        // It asks for the one family it reads, not a whole scrape.
        expect(asked).toEqual(["/metrics?name=process_cpu_seconds_total"]);
      },
    );
    expect(await metricsReading(`${base}/metrics`, 500)()).toBeNull();
  });
});
