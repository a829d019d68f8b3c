// The one CLI. Each subcommand lives in its own module and is loaded lazily,
// so `stallguard calibrate` does not pay for the server's imports.
import { defineCommand, runMain } from "citty";
import { VERSION } from "./version.ts";

const main = defineCommand({
  meta: {
    name: "stallguard",
    version: VERSION,
    description: "Catch an AI coding agent that is spinning instead of working.",
  },
  subCommands: {
    serve: () => import("./serve.ts").then((m) => m.default),
    calibrate: () => import("./calibrate.ts").then((m) => m.default),
    watchdog: () => import("./watchdog.ts").then((m) => m.default),
    "install-plugin": () => import("./install-plugin.ts").then((m) => m.default),
    "install-units": () => import("./install-units.ts").then((m) => m.default),
  },
});

await runMain(main);
