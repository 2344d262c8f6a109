import { BasaltError, SystemError } from "../errors.js";

/** Fetched content whose size or SHA-256 differs from the digest that named it: never used, never kept. */
export class DigestMismatchError extends BasaltError {}

/** A registry answered with an error status or could not be reached. */
export class RegistryError extends SystemError {}
