// The entry points' flag parser lives low enough for client/ to share it.
export { parseFlags, type FlagKind, type FlagValue, type ParsedArgs } from "../flags.js";
