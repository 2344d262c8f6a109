import { ApplyMode, applyModeName } from "../../api/enums.js";
import { multiError } from "../../config/index.js";
import { ConfigParseError, describeError, InvalidInputError, UnimplementedError } from "../../errors.js";

export interface ApplyRequest {
  data?: Buffer;
  mode?: number;
  dry_run?: boolean;
  /** google.protobuf.Duration */
  try_mode_timeout?: { seconds?: number; nanos?: number };
}

/** What a parsed configuration must offer machined (a subset of the config module's ConfigBundle). */
export interface ParsedConfig {
  readonly completeForBoot: boolean;
  readonly warnings: readonly string[];
}

export interface ConfigChecker<C extends ParsedConfig> {
  /** Parses; throws (e.g. ConfigParseError) naming every problem. */
  parse(data: Buffer): C;
  /** Validates for this platform; every returned error names its field. */
  validate(config: C): { errors: string[]; warnings: string[] };
}

/**
 * Parses and validates a configuration sent with ApplyConfiguration. Throws
 * ConfigParseError ("failed to parse config: ...", Unknown on the wire) or
 * InvalidInputError ("configuration validation failed: ...", InvalidArgument).
 */
export function checkConfig<C extends ParsedConfig>(
  checker: ConfigChecker<C>,
  data: Buffer,
): { config: C; warnings: string[] } {
  let config: C;
  try {
    config = checker.parse(data);
  } catch (err) {
    // The loader's message already names every problem; no cause chain, so it is not repeated.
    throw new ConfigParseError(`failed to parse config: ${describeError(err)}`, {
      problems: (err as { fields?: { problems?: unknown } }).fields?.problems,
    });
  }
  const { errors, warnings } = checker.validate(config);
  if (errors.length > 0) {
    throw new InvalidInputError(`configuration validation failed: ${multiError(errors)}`, { problems: errors });
  }
  return { config, warnings: [...new Set([...config.warnings, ...warnings])] };
}

/** Maintenance mode accepts only modes that hand the config over (reference §2). */
export function checkMaintenanceMode(mode: number): void {
  if (mode === ApplyMode.NO_REBOOT || mode === ApplyMode.STAGED) {
    throw new UnimplementedError(
      `apply configuration --mode='${applyModeName(mode)}' is not supported in maintenance mode`,
    );
  }
}

export const maintenanceDryRunDetails =
  "Dry run summary:\nNode is running in maintenance mode and does not have a config yet.";
