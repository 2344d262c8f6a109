// runtime.SecurityStateController: SecurityState `securitystate`, written once. Secure Boot counts
// as on when the firmware's SecureBoot variable is 1 and it is not in setup mode (Talos's rule);
// in a container (the sandbox) the fields stay empty, as Talos leaves them. Basalt's boot image
// is no signed UKI and carries no PCR signing key, so the fingerprints stay empty.

import { readFile } from "node:fs/promises";
import path from "node:path";
import type { Controller, ControllerContext } from "../../resources/controller-runtime.js";
import { RUNTIME_NAMESPACE } from "../../resources/catalog/runtime.js";
import { SecurityStateId, SecurityStateType, type SecurityStateSpec } from "../../resources/catalog/security.js";

/** The EFI global variables' vendor GUID (SecureBoot, SetupMode). */
const EFI_GLOBAL_VARIABLE = "8be4df61-93ca-11d2-aa0d-00e098032b8c";

export interface SecurityStateOptions {
  /** Talos's container mode (the sandbox): the host's firmware is not the node's. */
  container: boolean;
  /** Where efivarfs is mounted. */
  efivarsDir?: string;
}

export class SecurityStateController implements Controller {
  readonly name = "runtime.SecurityStateController";
  readonly inputs = [];
  readonly outputs = [{ type: SecurityStateType }];

  constructor(private readonly opts: SecurityStateOptions) {}

  async reconcile(ctx: ControllerContext): Promise<void> {
    if (ctx.get(RUNTIME_NAMESPACE, SecurityStateType, SecurityStateId)) return;
    const secureBoot = this.opts.container ? false : await this.secureBootEnforced();
    ctx.modify<SecurityStateSpec>(RUNTIME_NAMESPACE, SecurityStateType, SecurityStateId, () => ({ secureBoot }));
  }

  private async secureBootEnforced(): Promise<boolean> {
    const dir = this.opts.efivarsDir ?? "/sys/firmware/efi/efivars";
    const [secureBoot, setupMode] = await Promise.all([efiFlag(dir, "SecureBoot"), efiFlag(dir, "SetupMode")]);
    return secureBoot === true && setupMode !== true;
  }
}

/** A one-byte EFI variable as a flag (after efivarfs's 4 attribute bytes); undefined when absent (BIOS boot, no such variable). */
async function efiFlag(dir: string, name: string): Promise<boolean | undefined> {
  try {
    const data = await readFile(path.join(dir, `${name}-${EFI_GLOBAL_VARIABLE}`));
    return data.length > 4 ? data[4] === 1 : undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}
