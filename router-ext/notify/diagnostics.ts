// Startup checks for the desktop channel: is there a session bus address, and
// does its socket answer? Also whether the notify-send command can be found.
// Every problem is one plain sentence that says what to fix.
import { accessSync, constants } from "node:fs";
import { connect } from "node:net";
import { delimiter, join } from "node:path";
import type { Env } from "./channels/secret-env.ts";

const CONNECT_TIMEOUT_MS = 1000;

type BusEndpoint =
  | { kind: "path"; name: string }
  | { kind: "abstract"; name: string }
  | { kind: "tcp"; host: string; port: number };

/** The connectable endpoints of a D-Bus address list (`unix:path=...;tcp:host=...,port=...`). */
export function parseBusAddress(address: string): { endpoints: BusEndpoint[]; unsupported: string[] } {
  const endpoints: BusEndpoint[] = [];
  const unsupported: string[] = [];
  for (const entry of address.split(";").filter((e) => e.trim() !== "")) {
    const colon = entry.indexOf(":");
    const transport = colon < 0 ? entry : entry.slice(0, colon);
    const keys = new Map<string, string>();
    for (const pair of (colon < 0 ? "" : entry.slice(colon + 1)).split(",")) {
      const eq = pair.indexOf("=");
      if (eq > 0) {
        let value = pair.slice(eq + 1);
        try {
          value = decodeURIComponent(value);
        } catch {
          // Not percent-encoded after all: keep the raw text.
        }
        keys.set(pair.slice(0, eq), value);
      }
    }
    const path = keys.get("path");
    const abstract = keys.get("abstract");
    if (transport === "unix" && path) endpoints.push({ kind: "path", name: path });
    else if (transport === "unix" && abstract) endpoints.push({ kind: "abstract", name: abstract });
    else if (transport === "tcp" && keys.get("host") && Number(keys.get("port")) > 0)
      endpoints.push({ kind: "tcp", host: keys.get("host") ?? "", port: Number(keys.get("port")) });
    else unsupported.push(transport);
  }
  return { endpoints, unsupported };
}

function label(e: BusEndpoint): string {
  if (e.kind === "path") return e.name;
  if (e.kind === "abstract") return `abstract socket ${e.name}`;
  return `${e.host}:${e.port}`;
}

/** null when the endpoint accepts a connection, else the error code. */
function tryConnect(e: BusEndpoint): Promise<string | null> {
  return new Promise((resolve) => {
    const sock =
      e.kind === "tcp"
        ? connect({ host: e.host, port: e.port })
        : connect({ path: e.kind === "abstract" ? `\0${e.name}` : e.name });
    const timer = setTimeout(() => {
      sock.destroy();
      resolve("ETIMEDOUT");
    }, CONNECT_TIMEOUT_MS);
    sock.once("connect", () => {
      clearTimeout(timer);
      sock.destroy();
      resolve(null);
    });
    sock.once("error", (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(err.code ?? "error");
    });
  });
}

function explain(e: BusEndpoint, code: string): string {
  const where = label(e);
  if (code === "ENOENT")
    return `the session bus socket ${where} (from DBUS_SESSION_BUS_ADDRESS) does not exist: is the desktop session running, or does sandboxing (ProtectHome, PrivateTmp, InaccessiblePaths) hide it?`;
  if (code === "ECONNREFUSED")
    return `nothing listens on the session bus socket ${where} (from DBUS_SESSION_BUS_ADDRESS): the bus is gone or the address is stale`;
  if (code === "EACCES" || code === "EPERM")
    return `permission denied on the session bus socket ${where}: the service must run as the desktop user, with the socket allowed by its sandboxing`;
  if (code === "ETIMEDOUT")
    return `the session bus at ${where} did not answer within ${CONNECT_TIMEOUT_MS} ms`;
  return `cannot connect to the session bus at ${where}: ${code}`;
}

/** Problems that keep notify-send from reaching the desktop; empty when the bus answers. */
export async function checkSessionBus(env: Env): Promise<string[]> {
  const address = (env.DBUS_SESSION_BUS_ADDRESS ?? "").trim();
  if (!address)
    return [
      "DBUS_SESSION_BUS_ADDRESS is not set, so notify-send cannot reach the desktop: run the service in the user session with that variable (normally unix:path=/run/user/<uid>/bus)",
    ];
  const { endpoints, unsupported } = parseBusAddress(address);
  if (endpoints.length === 0)
    return [
      `DBUS_SESSION_BUS_ADDRESS has no address this check can connect to (${unsupported.join(", ") || "empty"}): expected unix:path=...`,
    ];
  const problems: string[] = [];
  for (const e of endpoints) {
    const code = await tryConnect(e);
    if (code === null) return [];
    problems.push(explain(e, code));
  }
  return problems;
}

/** A problem sentence when `command` is not an executable file (looked up on PATH when it has no slash). */
export function checkCommand(command: string, env: Env): string | null {
  const runnable = (p: string) => {
    try {
      accessSync(p, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (command.includes("/")) return runnable(command) ? null : `${command} is not an executable file`;
  const dirs = (env.PATH ?? "").split(delimiter).filter(Boolean);
  if (dirs.some((d) => runnable(join(d, command)))) return null;
  return `${command} was not found on PATH${command === "notify-send" ? " (install libnotify-bin)" : ""}`;
}
