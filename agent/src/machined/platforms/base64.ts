// Base64 as Go's StdEncoding decodes it for Talos's platforms: padded, line breaks ignored.

import { MetadataError } from "./metadata-http.js";

/** The bytes of `text`; anything but padded standard base64 is a MetadataError naming `what`. */
export function decodeBase64(text: string, what: string): Buffer {
  const s = text.replace(/[\r\n]/g, "");
  if (s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(s))
    throw new MetadataError(`${what} is not base64`, { what });
  return Buffer.from(s, "base64");
}
