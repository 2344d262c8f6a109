// Filesystem errors in the words a Go server uses ("stat /x: no such file or directory"),
// which is what talosctl users see from Talos; missing paths are NotFound.

import { NotFoundError, SystemError } from "../../errors.js";

/** The strerror part of a Node fs error ("ENOENT: no such file or directory, stat '/x'"). */
export function errnoText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const m = /^[A-Z0-9_]+: ([^,]+)/.exec(e?.message ?? "");
  return m?.[1] ?? String(e?.message ?? err);
}

/** `<op> <path>: <strerror>`, as Go's *fs.PathError prints. */
export function pathErrorText(op: string, file: string, err: unknown): string {
  return `${op} ${file}: ${errnoText(err)}`;
}

/**
 * Our error class for a failed filesystem call on `file`. The text already carries the
 * errno, and it travels as the status message, so Node's own wording is not chained on.
 */
export function pathError(op: string, file: string, err: unknown): Error {
  const text = pathErrorText(op, file, err);
  const code = (err as NodeJS.ErrnoException)?.code;
  return code === "ENOENT" ? new NotFoundError(text, { file, code }) : new SystemError(text, { file, code });
}
