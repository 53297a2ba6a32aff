import type { RequestListener } from "node:http";
import type { Client } from "minio";
import { describe, expect, it } from "vitest";
import { metricsReading } from "../../../bench/pipeline/cpu.ts";
import { pipelineFamilies } from "../../../processors/ops/ops-metrics.ts";
import { renderMetrics } from "../../../processors/ops/metrics.ts";
import { countingPuts, keepingRegions, minioClient, objectPuts } from "../../../store/objects.ts";
import { withLocalServer } from "../../support/local-http.ts";

/** A client's putObject alone, answering as MinIO would or failing. */
function fakeClient(fail: () => boolean) {
  const calls: unknown[][] = [];
  const client = {
    putObject: async (...args: Parameters<Client["putObject"]>) => {
      calls.push(args);
      await Promise.resolve();
      if (fail()) throw new Error("PreconditionFailed");
      return { etag: `e${calls.length}`, versionId: null };
    },
  };
  return { client, calls };
}

describe("objects put to MinIO, counted", () => {
  it("SYS-2 SYS-5 counts each put MinIO accepted, once, passing the arguments and the answer through; a failed put is not counted", async () => {
    let failing = false;
    const { client, calls } = fakeClient(() => failing);
    const counted = countingPuts(client);
    expect(counted).toBe(client);
    const before = objectPuts();
    const info = await counted.putObject("oz0-traces", "t/a.json", Buffer.from("{}"), 2, { "Content-Type": "application/json" });
    expect(info).toEqual({ etag: "e1", versionId: null });
    expect(calls[0]).toEqual(["oz0-traces", "t/a.json", Buffer.from("{}"), 2, { "Content-Type": "application/json" }]);
    await counted.putObject("oz0-audit", "a/b", Buffer.alloc(0), 0);
    expect(objectPuts() - before).toBe(2);
    failing = true;
    await expect(counted.putObject("oz0-audit", "a/b", Buffer.alloc(0), 0)).rejects.toThrow("PreconditionFailed");
    expect(objectPuts() - before).toBe(2);
  });

  it("SYS-2 SYS-5 every client minioClient makes counts its puts (one that fails to connect counts none)", async () => {
    const client = minioClient({ kafkaBrokers: [], registryUrl: "", redisUrl: "", minioUrl: "http://127.0.0.1:1", minioAccessKey: "k", minioSecretKey: "s" });
    expect(Object.prototype.hasOwnProperty.call(client, "putObject")).toBe(true);
    const before = objectPuts();
    await expect(client.putObject("oz0-files", "x", Buffer.from("x"), 1)).rejects.toThrow();
    expect(objectPuts()).toBe(before);
  });

  it("SYS-2 SYS-5 the pipeline's metrics serve the count as oz0_object_puts_total, which the load reads", async () => {
    const text = await renderMetrics(pipelineFamilies({ processors: [], lag: () => 0, objectPuts: () => 37 }));
    expect(text.split("\n")).toContain("# TYPE oz0_object_puts_total counter");
    expect(text.split("\n")).toContain("oz0_object_puts_total 37");
    // Without a count given, no such series.
    expect(await renderMetrics(pipelineFamilies({ processors: [], lag: () => 0 }))).not.toContain("oz0_object_puts_total");
    await withLocalServer(
      (_, res) => res.end(text),
      async (base) => {
        expect(await metricsReading(`${base}/metrics`, 1_000, "oz0_object_puts_total")()).toBe(37);
        expect(await metricsReading(`${base}/metrics`, 1_000, "oz0_no_such_total")()).toBeNull();
      },
    );
  });
});

describe("a bucket's region, asked once", () => {
  it("SYS-2 keeps a bucket's region once learned; an ask that failed is asked again", async () => {
    const asked: string[] = [];
    let failing = true;
    const client = keepingRegions({
      getBucketRegionAsync: (bucket: string) => {
        asked.push(bucket);
        return failing ? Promise.reject(new Error("connect ECONNREFUSED")) : Promise.resolve(`region-of-${bucket}`);
      },
    });
    await expect(client.getBucketRegionAsync("oz0-files")).rejects.toThrow("ECONNREFUSED");
    failing = false;
    const [a, b] = await Promise.all([client.getBucketRegionAsync("oz0-files"), client.getBucketRegionAsync("oz0-files")]);
    expect([a, b]).toEqual(["region-of-oz0-files", "region-of-oz0-files"]);
    expect(await client.getBucketRegionAsync("oz0-audit")).toBe("region-of-oz0-audit");
    expect(await client.getBucketRegionAsync("oz0-files")).toBe("region-of-oz0-files");
    expect(asked).toEqual(["oz0-files", "oz0-files", "oz0-audit"]);
  });

  it("SYS-2 minioClient's client asks for the region once, though objects looked for are absent (404s the minio client would forget it after)", async () => {
    const requests: string[] = [];
    const answer: RequestListener = (req, res) => {
      requests.push(`${req.method} ${req.url}`);
      if (req.url?.endsWith("?location")) {
        res.setHeader("Content-Type", "application/xml");
        res.end('<?xml version="1.0" encoding="UTF-8"?><LocationConstraint xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></LocationConstraint>');
        return;
      }
      res.statusCode = 404;
      if (req.method !== "HEAD") res.setHeader("Content-Type", "application/xml");
      res.end(req.method === "HEAD" ? undefined : '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>absent</Message></Error>');
    };
    await withLocalServer(answer, async (base) => {
      const client = minioClient({ kafkaBrokers: [], registryUrl: "", redisUrl: "", minioUrl: base, minioAccessKey: "k", minioSecretKey: "s" });
      for (const name of ["a", "b", "c"]) await expect(client.statObject("oz0-files", name)).rejects.toThrow();
      await expect(client.getObject("oz0-files", "d")).rejects.toThrow();
      expect(requests.filter((r) => r.endsWith("?location"))).toEqual(["GET /oz0-files?location"]);
      expect(requests.filter((r) => !r.endsWith("?location"))).toEqual(["HEAD /oz0-files/a", "HEAD /oz0-files/b", "HEAD /oz0-files/c", "GET /oz0-files/d"]);
    });
  });
});
