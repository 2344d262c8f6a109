// SecurityState from the firmware's EFI variables: Secure Boot on only when SecureBoot is 1 and the
// firmware is not in setup mode; nothing read in a container; no efivars (BIOS) means off.
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { SecurityStateController } from "../../../../agent/src/controllers/runtime/security-state.js";
import { registerCatalog } from "../../../../agent/src/resources/catalog/index.js";
import { RUNTIME_NAMESPACE } from "../../../../agent/src/resources/catalog/runtime.js";
import {
  SecurityStateId,
  SecurityStateType,
  securityStateDefinition,
  type SecurityStateSpec,
} from "../../../../agent/src/resources/catalog/security.js";
import { ControllerRuntime } from "../../../../agent/src/resources/controller-runtime.js";
import { ResourceState } from "../../../../agent/src/resources/state.js";

const GUID = "8be4df61-93ca-11d2-aa0d-00e098032b8c";

/** efivarfs's layout: 4 attribute bytes (NV+BS+RT = 0x07), then the value. */
async function efivars(t: { after(fn: () => Promise<void>): void }, vars: Record<string, number>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "basalt-efivars-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  for (const [name, value] of Object.entries(vars))
    await writeFile(path.join(dir, `${name}-${GUID}`), Buffer.from([0x07, 0, 0, 0, value]));
  return dir;
}

async function securityState(
  t: { after(fn: () => Promise<void>): void },
  controller: SecurityStateController,
): Promise<SecurityStateSpec | undefined> {
  const state = new ResourceState();
  registerCatalog(state);
  const runtime = new ControllerRuntime(state);
  const ac = new AbortController();
  t.after(async () => {
    ac.abort();
    await runtime.whenIdle();
  });
  runtime.register(controller);
  runtime.start(ac.signal);
  await runtime.whenIdle();
  return state.get<SecurityStateSpec>(RUNTIME_NAMESPACE, SecurityStateType, SecurityStateId)?.spec;
}

test("Secure Boot enforced: SecureBoot=1, SetupMode=0", async (t) => {
  const dir = await efivars(t, { SecureBoot: 1, SetupMode: 0 });
  assert.deepEqual(await securityState(t, new SecurityStateController({ container: false, efivarsDir: dir })), {
    secureBoot: true,
  });
});

test("Secure Boot on but the firmware in setup mode is not enforced", async (t) => {
  const dir = await efivars(t, { SecureBoot: 1, SetupMode: 1 });
  assert.deepEqual(await securityState(t, new SecurityStateController({ container: false, efivarsDir: dir })), {
    secureBoot: false,
  });
});

test("no EFI variables (a BIOS boot) and a container both read as off", async (t) => {
  const empty = await efivars(t, {});
  assert.deepEqual(await securityState(t, new SecurityStateController({ container: false, efivarsDir: empty })), {
    secureBoot: false,
  });
  const enforced = await efivars(t, { SecureBoot: 1, SetupMode: 0 });
  assert.deepEqual(await securityState(t, new SecurityStateController({ container: true, efivarsDir: enforced })), {
    secureBoot: false,
  });
});

test("the wire encoding is Talos's SecurityStateSpec, fingerprints empty when absent", () => {
  assert.equal(securityStateDefinition.protoSpecType, "talos.resource.definitions.runtime.SecurityStateSpec");
  assert.deepEqual(securityStateDefinition.toProto!({ secureBoot: true }), {
    secure_boot: true,
    uki_signing_key_fingerprint: "",
    pcr_signing_key_fingerprint: "",
  });
});
