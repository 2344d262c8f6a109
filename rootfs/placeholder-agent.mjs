// A stand-in for the agent bundle while machined is not ready: proves the boot
// path (init -> node -> network -> TCP listener) in QEMU user networking.
// Used by `BASALT_AGENT=placeholder npm run image`; never shipped otherwise.
import { execFileSync } from "node:child_process";
import http from "node:http";
import fs from "node:fs";

// It reconfigures networking: refuse to run anywhere but on a node booted by basalt-init.
if (!fs.existsSync("/run/init/control")) { console.error("placeholder agent: not on a Basalt node"); process.exit(2); }
const up = () => fs.readFileSync("/proc/uptime", "utf8").split(" ")[0];
console.log(`placeholder machined: kernel uptime ${up()} s: started`);
const ip = (...args) => { try { execFileSync("/usr/sbin/ip", args); } catch (e) { console.log(`ip ${args.join(" ")}: ${e.message}`); } };
const link = fs.readdirSync("/sys/class/net").find((n) => n !== "lo");
ip("link", "set", "lo", "up");
ip("link", "set", link, "up");
ip("addr", "add", "10.0.2.15/24", "dev", link); // QEMU user networking's fixed guest address
ip("route", "add", "default", "via", "10.0.2.2");
const debug = () => ["/proc/1/wchan", "/proc/1/status", "/proc/uptime"].map((f) => { try { return `${f}: ${fs.readFileSync(f, "utf8")}`; } catch (e) { return `${f}: ${e.message}`; } }).join("\n")
  + "\nfds: " + fs.readdirSync("/proc/1/fd").map((f) => { try { return f + "->" + fs.readlinkSync(`/proc/1/fd/${f}`); } catch { return f; } }).join(" ");
// GET /power/<reboot|poweroff|halt> asks init through its control FIFO; GET /exit/<code>
// exits (init restarts it): both exercise init's protocol and supervision from the host.
http.createServer((req, res) => {
  const power = /^\/power\/(reboot|poweroff|halt)$/.exec(req.url ?? "");
  const exit = /^\/exit\/(\d+)$/.exec(req.url ?? "");
  if (power) { res.end(`requesting ${power[1]}\n`); fs.writeFileSync("/run/init/control", `${power[1]}\n`); return; }
  if (exit) { res.end(`exiting ${exit[1]}\n`, () => process.exit(Number(exit[1]))); return; }
  res.end(`basalt placeholder on ${link}\n${debug()}\n`);
}).listen(50000, () => {
  console.log(`placeholder machined: kernel uptime ${up()} s: listening on :50000 (${link})`);
});
