// `ctl k8s-images`: its arguments refused as the caller's error before any work.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { k8sImagesBuild, k8sImagesPush } from "../../../agent/src/cmd/ctl-k8s-images.js";
import { InvalidInputError } from "../../../agent/src/errors.js";

const io = { out: () => undefined, log: () => undefined, cwd: () => "/nonexistent" };

describe("ctl k8s-images arguments", () => {
  it("build needs --inputs and --output, and knows only amd64 and arm64", async () => {
    await assert.rejects(
      k8sImagesBuild(["--output", "x.tar"], io),
      (err) => err instanceof InvalidInputError && /--inputs DIR and --output FILE/.test(err.message),
    );
    await assert.rejects(
      k8sImagesBuild(["--inputs", "in", "--output", "x.tar", "--arch", "amd64,riscv64"], io),
      (err) => err instanceof InvalidInputError && /--arch amd64,riscv64/.test(err.message),
    );
    await assert.rejects(
      k8sImagesBuild(["--inputs", "in", "--output", "x.tar", "--only", "etcd,kube-dns"], io),
      (err) => err instanceof InvalidInputError && /unknown image kube-dns/.test(err.message),
    );
  });

  it("push takes a registry host, not a repository: each image keeps its own path", async () => {
    await assert.rejects(
      k8sImagesPush(["images.tar"], io),
      (err) => err instanceof InvalidInputError && /ARCHIVE and HOST:PORT/.test(err.message),
    );
    await assert.rejects(
      k8sImagesPush(["images.tar", "127.0.0.1:5000/mirror", "--insecure"], io),
      (err) => err instanceof InvalidInputError && /must be a registry host/.test(err.message),
    );
  });
});
