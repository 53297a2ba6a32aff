// Does the Kafka broker answer? Sends one Metadata request (v4, all topics) over a plain
// socket and exits 0 when the answer lists at least one broker; 1 otherwise, within the
// time limit. Used by stack/lib.sh (up.sh, status.sh) because a JVM tool takes seconds to
// start. Needs only node:net, no node_modules.
//   node stack/kafka/probe.mjs HOST PORT [TIMEOUT_MS]
import { Buffer } from "node:buffer";
import net from "node:net";
import process from "node:process";
import { setTimeout } from "node:timers";

const host = process.argv[2] ?? "127.0.0.1";
const port = Number(process.argv[3] ?? "9092");
const timeoutMs = Number(process.argv[4] ?? "5000");
const CORRELATION_ID = 0x0a0b0c0d;

function request() {
  const clientId = Buffer.from("oz0-stack-probe");
  const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length + 4 + 1);
  let o = 0;
  o = body.writeInt16BE(3, o); // api key: Metadata
  o = body.writeInt16BE(4, o); // api version 4 (Kafka 4.x serves v4 and later)
  o = body.writeInt32BE(CORRELATION_ID, o);
  o = body.writeInt16BE(clientId.length, o);
  o += clientId.copy(body, o);
  o = body.writeInt32BE(-1, o); // topics: null, i.e. all topics
  body.writeInt8(0, o); // allow_auto_topic_creation: false
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length, 0);
  return Buffer.concat([size, body]);
}

function done(code, message) {
  if (message) process.stderr.write(`kafka probe ${host}:${port}: ${message}\n`);
  process.exit(code);
}

const timer = setTimeout(() => done(1, `no answer within ${timeoutMs} ms`), timeoutMs);
timer.unref();

const socket = net.connect({ host, port }, () => socket.write(request()));
let received = Buffer.alloc(0);
socket.on("data", (chunk) => {
  received = Buffer.concat([received, chunk]);
  if (received.length < 4) return;
  const size = received.readInt32BE(0);
  if (received.length < 4 + size) return;
  const r = received.subarray(4, 4 + size);
  try {
    if (r.readInt32BE(0) !== CORRELATION_ID) return done(1, "answer with a wrong correlation id");
    // throttle_time_ms (int32), then the brokers array
    let o = 8;
    const count = r.readInt32BE(o);
    o += 4;
    const brokers = [];
    for (let i = 0; i < count; i++) {
      const id = r.readInt32BE(o);
      o += 4;
      const len = r.readInt16BE(o);
      o += 2;
      const h = r.toString("utf8", o, o + len);
      o += len;
      const p = r.readInt32BE(o);
      o += 4;
      const rackLen = r.readInt16BE(o);
      o += 2 + Math.max(rackLen, 0);
      brokers.push(`${id}@${h}:${p}`);
    }
    socket.destroy();
    if (brokers.length === 0) return done(1, "metadata lists no broker yet");
    process.stdout.write(`brokers: ${brokers.join(" ")}\n`);
    done(0);
  } catch (err) {
    done(1, `unreadable answer: ${err instanceof Error ? err.message : String(err)}`);
  }
});
socket.on("error", (err) => done(1, err.message));
socket.on("close", () => done(1, "connection closed before an answer"));
