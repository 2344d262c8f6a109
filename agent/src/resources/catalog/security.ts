// SecurityStates.talos.dev (id "securitystate"): whether the node booted with UEFI Secure Boot
// enforced, and the fingerprints of the keys that signed its boot image and PCR policy.

import { defineResource, type ResourceDefinition } from "../definitions.js";
import { RUNTIME_NAMESPACE } from "./runtime.js";

export const SecurityStateType = "SecurityStates.talos.dev";
export const SecurityStateId = "securitystate";

export interface SecurityStateSpec {
  secureBoot: boolean;
  /** Absent (as Talos omits it) when the boot image is not a signed UKI. */
  ukiSigningKeyFingerprint?: string;
  pcrSigningKeyFingerprint?: string;
}

export const securityStateDefinition = defineResource<SecurityStateSpec>({
  type: SecurityStateType,
  defaultNamespace: RUNTIME_NAMESPACE,
  printColumns: [
    { name: "SecureBoot", jsonPath: "{.secureBoot}" },
    { name: "UKISigningKeyFingerprint", jsonPath: "{.ukiSigningKeyFingerprint}" },
    { name: "PCRSigningKeyFingerprint", jsonPath: "{.pcrSigningKeyFingerprint}" },
  ],
  protoSpecType: "talos.resource.definitions.runtime.SecurityStateSpec",
  toProto: (s) => ({
    secure_boot: s.secureBoot,
    uki_signing_key_fingerprint: s.ukiSigningKeyFingerprint ?? "",
    pcr_signing_key_fingerprint: s.pcrSigningKeyFingerprint ?? "",
  }),
});

export const securityDefinitions: readonly ResourceDefinition<never>[] = [securityStateDefinition];
