// A scripted metadata service for the platform unit tests: answers by "METHOD URL", records
// every request it was sent (method, URL, headers) in order.
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "yaml";
import type {
  MetadataHttp,
  MetadataReply,
  MetadataRequest,
} from "../../../../agent/src/machined/platforms/metadata-http.js";
import type { PlatformIo } from "../../../../agent/src/machined/platforms/platform.js";
import type { VmwareBackdoor } from "../../../../agent/src/sys/vmware-backdoor.js";
import { logger } from "../../../../agent/src/log.js";
import type { KnownLink } from "../../../../agent/src/network/config-specs.js";
import { repoRoot } from "../../pki/fixtures.js";
import { answer, type Scenario } from "../../../integration/helpers/metadata-server.js";

export interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

export type Answer = MetadataReply | ((req: Sent) => MetadataReply);

export function reply(status: number, body: string | Buffer = ""): MetadataReply {
  return { status, body: Buffer.isBuffer(body) ? body : Buffer.from(body) };
}

export class ScriptedHttp implements MetadataHttp {
  readonly sent: Sent[] = [];
  constructor(private readonly answers: Map<string, Answer>) {}

  async request(url: string, req: MetadataRequest = {}): Promise<MetadataReply> {
    const sent: Sent = {
      method: req.method ?? "GET",
      url,
      headers: req.headers ?? {},
      ...(req.body !== undefined ? { body: req.body } : {}),
    };
    this.sent.push(sent);
    const answer = this.answers.get(`${sent.method} ${url}`);
    if (answer === undefined) return reply(404, "not found");
    return typeof answer === "function" ? answer(sent) : answer;
  }
}

/** A CPU that runs on no hypervisor: nothing answers a backdoor call. */
const noHypervisor: VmwareBackdoor = {
  hypervisorSignature: () => "",
  call: () => {
    throw new Error("no hypervisor's backdoor on this node");
  },
};

/**
 * A node whose volumes are `volumes` by label, and whose CD devices hold `devices` (name -> file ->
 * bytes); without kernel arguments nor hypervisor unless `node` gives them.
 */
export function platformIo(
  http: MetadataHttp,
  volumes: Map<string, Map<string, Buffer>> = new Map(),
  devices: Map<string, Map<string, Buffer>> = new Map(),
  node: Partial<Pick<PlatformIo, "cmdline" | "vmwareBackdoor">> = {},
): PlatformIo {
  return {
    http,
    cmdline: node.cmdline ?? new Map(),
    vmwareBackdoor: node.vmwareBackdoor ?? noHypervisor,
    signal: new AbortController().signal,
    // Retried at once, three times.
    retry: {
      backoffMs: (n) => (n < 3 ? 0 : Number.POSITIVE_INFINITY),
      totalTimeoutMs: 60_000,
      wait: async () => undefined,
    },
    readVolume: async (labels, files) => {
      for (const label of labels) {
        const v = volumes.get(label);
        if (v)
          return {
            device: `/dev/disk/by-label/${label}`,
            files: new Map([...v].filter(([name]) => files.includes(name))),
          };
      }
      return undefined;
    },
    readDeviceFile: async (names, _fstype, file) => {
      for (const [name, files] of [...devices].sort()) {
        const data = files.get(file);
        if (names.test(name) && data) return { device: `/dev/${name}`, files: new Map([[file, data]]) };
      }
      return undefined;
    },
    log: logger("test"),
  };
}

export function link(name: string, mac: string): KnownLink {
  return { name, spec: { index: 0, type: "ether", kind: "", hardwareAddr: mac, permanentAddr: mac } };
}

export const platformFixtures = path.join(repoRoot, "test/fixtures/platforms");

export function fixtureText(relative: string): string {
  return readFileSync(path.join(platformFixtures, relative), "utf8");
}

export function fixtureYaml(relative: string): unknown {
  return parse(fixtureText(relative));
}

/**
 * The integration tests' metadata service (each platform's documented protocol) answering in
 * process: what a node's HTTP would get from it on 169.254.169.254.
 */
export class ServedHttp implements MetadataHttp {
  readonly sent: Sent[] = [];
  constructor(public scenario: Scenario) {}

  async request(url: string, req: MetadataRequest = {}): Promise<MetadataReply> {
    const headers = req.headers ?? {};
    this.sent.push({
      method: req.method ?? "GET",
      url,
      headers,
      ...(req.body !== undefined ? { body: req.body } : {}),
    });
    const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    const a = answer(this.scenario, {
      method: req.method ?? "GET",
      url: new URL(url),
      headers: lower,
      body: req.body ?? "",
      // A port of the range a privileged request is sent from, or one of the kernel's ephemeral ones.
      sourcePort: req.lowSourcePort ? 100 : 40000,
    });
    if (a === "hang") throw new Error("the service never answers");
    return reply(a.status, a.body);
  }
}
