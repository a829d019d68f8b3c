import { describe, expect, it } from "vitest";
import { checkCommand, parseBusAddress } from "./diagnostics.ts";

describe("parseBusAddress", () => {
  it.each([
    ["unix:path=/run/user/1000/bus", [{ kind: "path", name: "/run/user/1000/bus" }], []],
    ["unix:path=/tmp/a%20b,guid=ff", [{ kind: "path", name: "/tmp/a b" }], []],
    ["unix:abstract=/tmp/dbus-x,guid=1", [{ kind: "abstract", name: "/tmp/dbus-x" }], []],
    ["tcp:host=127.0.0.1,port=5555", [{ kind: "tcp", host: "127.0.0.1", port: 5555 }], []],
    ["unix:dir=/tmp;unix:path=/x", [{ kind: "path", name: "/x" }], ["unix"]],
    ["launchd:env=X", [], ["launchd"]],
  ])("%s", (address, endpoints, unsupported) => {
    expect(parseBusAddress(address)).toEqual({ endpoints, unsupported });
  });
});

describe("checkCommand", () => {
  it("finds a command on PATH and names the package when notify-send is missing", () => {
    expect(checkCommand("sh", { PATH: "/usr/bin:/bin" })).toBeNull();
    expect(checkCommand("notify-send", { PATH: "/nonexistent" })).toBe(
      "notify-send was not found on PATH (install libnotify-bin)",
    );
    expect(checkCommand("/nonexistent/notify", {})).toBe("/nonexistent/notify is not an executable file");
  });
});
