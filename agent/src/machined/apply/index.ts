// ApplyConfiguration's decisions: config checks, the mode plan, the diff, try-mode rollback.
export {
  checkConfig,
  checkMaintenanceMode,
  maintenanceDryRunDetails,
  type ApplyRequest,
  type ConfigChecker,
  type ParsedConfig,
} from "./check.js";
export { configDiff } from "./diff.js";
export { defaultTryTimeoutMs, goDuration, tryTimeoutMs, type ProtoDuration } from "./duration.js";
export { checkImmediate, fieldsNeedingReboot, RebootRequiredError } from "./immediate.js";
export { planApply, type ApplyAction, type ApplyPlan, type ApplyPlanInput } from "./plan.js";
export { TryModeTimer } from "./try-timer.js";
