// The CLI as a function: argv in, an exit code out. Each verb lives in its
// own module and is loaded lazily, so `stallguard calibrate` does not pay for
// the server's imports. Only main.ts exits the process.
import { type CommandDef, defineCommand, renderUsage, runCommand } from "citty";
import { type CliIo, say, warn } from "./io.ts";
import { VERSION } from "./version.ts";

// biome-ignore lint/suspicious/noExplicitAny: each verb declares its own args
type Verb = CommandDef<any>;

const VERBS: Record<string, () => Promise<Verb>> = {
  serve: () => import("./serve.ts").then((m) => m.default),
  calibrate: () => import("./calibrate.ts").then((m) => m.default),
  watchdog: () => import("./watchdog.ts").then((m) => m.default),
  "install-plugin": () => import("./install-plugin.ts").then((m) => m.default),
  "install-units": () => import("./install-units.ts").then((m) => m.default),
  doctor: () => import("./doctor.ts").then((m) => m.default),
};

const main = defineCommand({
  meta: {
    name: "stallguard",
    version: VERSION,
    description: "Catch an AI coding agent that is spinning instead of working.",
  },
  subCommands: VERBS,
});

const isHelp = (a: string) => a === "--help" || a === "-h";

/**
 * Runs one CLI invocation; never exits the process and never throws.
 *
 * @example
 * const code = await run(["watchdog", "--once"], processIo());
 */
export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  try {
    if (name === "--version" || name === "-v") {
      say(io, VERSION);
      return 0;
    }
    if (name === undefined || isHelp(name)) {
      say(io, await renderUsage(main));
      return name === undefined ? 1 : 0;
    }
    const load = VERBS[name];
    if (!load) {
      warn(io, `stallguard: unknown command ${name} (see stallguard --help)`);
      return 2;
    }
    const verb = await load();
    if (rest.some(isHelp)) {
      say(io, await renderUsage(verb, main));
      return 0;
    }
    const { result } = await runCommand(verb, { rawArgs: [...rest], data: io });
    return typeof result === "number" ? result : 0;
  } catch (err) {
    warn(io, `stallguard ${name ?? ""}: ${(err as Error).message}`);
    return 1;
  }
}
