// machine.MachineConfig.MachineType as GenerateConfiguration requests carry it; apart from request.ts so
// machined checks it without loading config generation (and @peculiar/x509) at start.
/** machine.MachineConfig.MachineType values. */
export const MachineTypeEnum = { TYPE_UNKNOWN: 0, TYPE_INIT: 1, TYPE_CONTROL_PLANE: 2, TYPE_WORKER: 3 } as const;
