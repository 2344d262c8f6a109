// syslogd's parsing, as Talos's: a datagram on /dev/log in RFC5424 or RFC3164 (best effort)
// becomes one JSON line with Talos's fields (keys sorted as Go's encoder writes a map);
// what is not syslog at all is dropped. RFC3164 has no year (the current one is taken) and
// often no hostname ("localhost") or tag ("unknown").

const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** The JSON line Talos's syslogd logs for a datagram, or undefined when it is not syslog. */
export function parseSyslog(datagram: Buffer, now = new Date()): string | undefined {
  const text = datagram.toString("utf8");
  const pri = /^<(\d{1,3})>/.exec(text);
  if (!pri || Number(pri[1]) > 191) return undefined;
  const priority = Number(pri[1]);
  const rest = text.slice(pri[0].length);
  const fields = /^\d{1,2} /.test(rest) ? rfc5424(rest) : rfc3164(rest, now);
  if (!fields) return undefined;
  return sortedJson({ ...fields, priority, facility: Math.floor(priority / 8), severity: priority % 8 });
}

function rfc5424(rest: string): Record<string, unknown> | undefined {
  const m =
    /^(\d{1,2}) (\S+) (\S+) (\S+) (\S+) (\S+) (-|(?:\[(?:[^\]"\\]|\\.|"(?:[^"\\]|\\.)*")*\])+)(?: (.*))?$/s.exec(rest);
  if (!m) return undefined;
  const timestamp = m[2] === "-" ? undefined : goTime(m[2]!);
  if (m[2] !== "-" && timestamp === undefined) return undefined;
  return {
    version: Number(m[1]),
    timestamp: timestamp ?? "0001-01-01T00:00:00Z",
    hostname: m[3],
    app_name: m[4],
    proc_id: m[5],
    msg_id: m[6],
    structured_data: m[7],
    message: m[8] ?? "",
  };
}

/** An RFC 3339 time as Go's encoder writes it: offset 0 as Z, no trailing zeros in the fraction. */
function goTime(t: string): string | undefined {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(t);
  if (!m || Number.isNaN(Date.parse(t))) return undefined;
  const fraction = (m[2] ?? "").replace(/0+$/, "");
  const zone = m[3] === "+00:00" || m[3] === "-00:00" ? "Z" : m[3];
  return `${m[1]}${fraction ? "." + fraction : ""}${zone}`;
}

function rfc3164(rest: string, now: Date): Record<string, unknown> | undefined {
  const ts = /^([A-Z][a-z]{2}) ( ?\d{1,2}) (\d\d):(\d\d):(\d\d) /.exec(rest);
  if (!ts || !months.includes(ts[1]!)) return undefined;
  const p = (n: string | number) => String(n).trim().padStart(2, "0");
  const timestamp = `${now.getUTCFullYear()}-${p(months.indexOf(ts[1]!) + 1)}-${p(ts[2]!)}T${ts[3]}:${ts[4]}:${ts[5]}Z`;
  let body = rest.slice(ts[0].length);
  const head = rest.slice(0, ts[0].length + Math.max(0, body.indexOf("]:")));
  const tagged = body.includes("]:");
  // Talos's detection: a hostname is there when the part before "]:" has more than 3 spaces (and no padded day).
  const hasHostname = tagged && !/ {2}/.test(`<0>${head}`) && (`<0>${head}`.match(/ /g)?.length ?? 0) > 3;
  let hostname = "localhost";
  if (hasHostname) {
    const sp = body.indexOf(" ");
    hostname = body.slice(0, sp);
    body = body.slice(sp + 1);
  }
  let tag = "unknown";
  let content = body;
  const tagMatch = /^([^\s:[]{1,48})(?:\[[^\]]*\])?: ?/.exec(body);
  if (tagged && tagMatch) {
    tag = tagMatch[1]!;
    content = body.slice(tagMatch[0].length);
  }
  return { timestamp, hostname, tag, content: content.replace(/^ +| +$/g, "") };
}

function sortedJson(fields: Record<string, unknown>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
}

/** Splits the relay's stream (4-byte big-endian length, then the datagram) into datagrams. */
export function datagramFrames(onDatagram: (d: Buffer) => void): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 4 && pending.length >= 4 + pending.readUInt32BE(0)) {
      const n = pending.readUInt32BE(0);
      onDatagram(pending.subarray(4, 4 + n));
      pending = pending.subarray(4 + n);
    }
  };
}
