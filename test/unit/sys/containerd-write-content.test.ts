import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import * as grpc from "@grpc/grpc-js";
import { ContainerdClient } from "../../../agent/src/sys/containerd/client.js";
import { containerdService } from "../../../agent/src/sys/containerd/protos.js";

/**
 * A Content service that knows no blob, reads the first Write message, then fails the call without
 * reading more: the client's writes back up (write() answers false) and no drain ever comes.
 */
async function failingContentServer(socket: string): Promise<{ server: grpc.Server; writesSeen: () => number }> {
  let seen = 0;
  const server = new grpc.Server();
  server.addService(containerdService("containerd.services.content.v1.Content"), {
    Info: (_call: grpc.ServerUnaryCall<object, object>, cb: grpc.sendUnaryData<object>) =>
      cb({ code: grpc.status.NOT_FOUND, details: "not found" }),
    Write: (call: grpc.ServerDuplexStream<object, object>) => {
      call.once("data", () => {
        seen++;
        call.pause();
        // grpc-js ends a server call with this status when its stream emits 'error'.
        setImmediate(() => call.emit("error", { code: grpc.status.UNAVAILABLE, details: "disk full" }));
      });
    },
  });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix:${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  return { server, writesSeen: () => seen };
}

test("writeContent ends with containerd's error when the call fails while a write waits for drain (it used to wait forever)", {
  timeout: 60_000,
}, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "basalt-write-content-"));
  const socket = path.join(dir, "containerd.sock");
  const { server, writesSeen } = await failingContentServer(socket);
  const client = new ContainerdClient(socket, "system");
  // An after hook, not finally: it also runs when the write hangs and the test times out.
  t.after(() => {
    client.close();
    server.forceShutdown();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  // 64 MiB in 1 MiB messages: far more than the HTTP/2 window and the stream's buffer hold.
  const blob = Buffer.alloc(64 << 20, 7);
  await assert.rejects(
    client.writeContent("sha256:" + "0".repeat(64), blob.length, [blob]),
    /containerd Content\.Write: disk full/,
  );
  assert.equal(writesSeen(), 1);
});
