// The per-call log line, as Talos's gRPC log middleware writes it, and the interceptor machined's server runs.
import * as grpc from "@grpc/grpc-js";
import assert from "node:assert/strict";
import { test } from "node:test";
import { callLogInterceptor, goDuration, headerMetadata, metadataText } from "../../../agent/src/grpc/call-log.js";
import { logger, setLogSink } from "../../../agent/src/log.js";

test("durations read as Go's time.Duration prints them", () => {
  const cases: [number, string][] = [
    [0, "0s"],
    [999, "999ns"],
    [1_000, "1µs"],
    [350_500, "350.5µs"],
    [1_234_567, "1.234567ms"],
    [20_000_000, "20ms"],
    [1_500_000_000, "1.5s"],
    [62_500_000_000, "1m2.5s"],
    [7_200_000_000_000, "2h0m0s"],
  ];
  for (const [ns, text] of cases) assert.equal(goDuration(ns), text, `${ns} ns`);
});

test("metadata: keys sorted, values joined, the token hidden; headers become metadata as grpc-go makes them", () => {
  assert.equal(
    metadataText([
      ["nodes", ["a", "b"]],
      [":authority", ["n:50000"]],
      ["token", ["secret"]],
    ]),
    ":authority=n:50000;nodes=a,b;token=<hidden>",
  );
  const md = headerMetadata({
    ":method": "POST",
    ":path": "/x",
    ":authority": "n:50000",
    "content-type": "application/grpc",
    te: "trailers",
    "grpc-timeout": "5S",
    nodes: "a",
    "user-agent": "grpc-go/1.63.2",
  });
  assert.equal(metadataText(md), ":authority=n:50000;content-type=application/grpc;nodes=a;user-agent=grpc-go/1.63.2");
});

test("a server with the interceptor logs one line per call it answers, with its code and outcome", async () => {
  const lines: string[] = [];
  const previous = setLogSink((l) => lines.push(l));
  const server = new grpc.Server({ interceptors: [callLogInterceptor(logger("machined"))] });
  const identity = (b: Buffer) => b;
  const def = {
    Version: {
      path: "/machine.MachineService/Version",
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
    Rollback: {
      path: "/machine.MachineService/Rollback",
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  };
  server.addService(def, {
    Version: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, Buffer.alloc(0)),
    Rollback: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) =>
      cb({ code: grpc.status.FAILED_PRECONDITION, details: "no previous slot" }),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const call = (path: string) => {
    const md = new grpc.Metadata();
    md.set("nodes", "10.5.0.2");
    return new Promise<void>((resolve) =>
      client.makeUnaryRequest(path, identity, identity, Buffer.alloc(0), md, () => resolve()),
    );
  };
  try {
    await call(def.Version.path);
    await call(def.Rollback.path);
  } finally {
    client.close();
    server.forceShutdown();
    setLogSink(previous);
  }
  const records = lines
    .map((l) => JSON.parse(l) as Record<string, string>)
    .filter((r) => r["component"] === "machined");
  assert.equal(records.length, 2);
  assert.match(
    records[0]!["msg"]!,
    /^OK \[\/machine\.MachineService\/Version\] [\d.]+(ns|µs|ms|s) unary Success \(.*nodes=10\.5\.0\.2.*\)$/,
  );
  assert.match(
    records[1]!["msg"]!,
    /^FailedPrecondition \[\/machine\.MachineService\/Rollback\] [\d.]+(ns|µs|ms|s) unary rpc error: code = FailedPrecondition desc = no previous slot \(/,
  );
  assert.deepEqual(
    [records[0]!["code"], records[0]!["kind"], records[0]!["method"]],
    ["OK", "unary", "/machine.MachineService/Version"],
  );
});
