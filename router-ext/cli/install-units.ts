// Writes the systemd user units (deploy/systemd/*) with this machine's node
// and stallguard paths filled in: stallguard.service for `stallguard serve`,
// and stallguard-watchdog.service + .timer for the scheduled tick. It only
// writes files; enabling them is `systemctl --user daemon-reload` and
// `systemctl --user enable --now stallguard.service stallguard-watchdog.timer`
// (see enableUnits).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { defineCommand } from "citty";
import { packageRoot } from "../../io/config-files.ts";
import { userUnitDir } from "../watchdog/loop.ts";
import { stringArg, switchArg } from "./args.ts";
import { type CliIo, say, warn } from "./io.ts";

export const UNIT_FILES = [
  "stallguard.service",
  "stallguard-watchdog.service",
  "stallguard-watchdog.timer",
] as const;

export interface InstallUnitsOptions {
  /** The stallguard executable (dist/stallguard.mjs). */
  binPath: string;
  /** Target directory; default ~/.config/systemd/user ($XDG_CONFIG_HOME aware). */
  dir?: string;
  /** The node binary; default the one running now. */
  nodePath?: string;
  /** The timer period; default 5 minutes (watchdog.interval). */
  intervalMs?: number;
  /** The services' working directory (where config/ is); default the package root above binPath. */
  workDir?: string;
  /** Where the templates are; default deploy/systemd of this package. */
  templateDir?: string;
  env?: NodeJS.ProcessEnv;
}

export interface InstallUnitsResult {
  dir: string;
  files: string[];
}

export function templateDir(): string {
  const root = packageRoot(dirname(fileURLToPath(import.meta.url)));
  if (!root || !existsSync(join(root, "deploy", "systemd", "stallguard.service")))
    throw new Error("deploy/systemd templates not found next to this stallguard install");
  return join(root, "deploy", "systemd");
}

/** A path as one systemd command-line word: specifiers and variables escaped, quoted. */
export function systemdWord(path: string): string {
  if (/[\n\r"\\]/.test(path)) throw new Error(`unsupported character in path: ${JSON.stringify(path)}`);
  return `"${path.replace(/%/g, "%%").replace(/\$/g, "$$$$")}"`;
}

/** A path for a plain path setting (WorkingDirectory=): specifiers escaped, no quotes. */
function systemdPath(path: string): string {
  if (/[\n\r]/.test(path)) throw new Error("unsupported character in path");
  return path.replace(/%/g, "%%");
}

function seconds(ms: number): string {
  return `${Math.max(10, Math.round(ms / 1000))}s`;
}

/** The three unit files' text, keyed by file name. */
export function renderUnits(opts: InstallUnitsOptions): Record<string, string> {
  const bin = resolve(opts.binPath);
  const node = opts.nodePath ?? process.execPath;
  const interval = opts.intervalMs ?? 5 * 60_000;
  const workDir = opts.workDir ?? packageRoot(dirname(bin)) ?? dirname(bin);
  const tdir = opts.templateDir ?? templateDir();
  const vars: Record<string, string> = {
    "@NODE@": systemdWord(node),
    "@BIN@": systemdWord(bin),
    "@WORKDIR@": systemdPath(workDir),
    "@INTERVAL@": seconds(interval),
    "@TIMEOUT@": seconds(interval),
  };
  const out: Record<string, string> = {};
  for (const name of UNIT_FILES) {
    let text = readFileSync(join(tdir, name), "utf8");
    for (const [k, v] of Object.entries(vars)) text = text.split(k).join(v);
    out[name] = text;
  }
  return out;
}

/** Writes the units (atomically, one by one) and returns their paths. */
export function installUnits(opts: InstallUnitsOptions): InstallUnitsResult {
  const dir = opts.dir ?? userUnitDir(opts.env);
  mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  for (const [name, text] of Object.entries(renderUnits(opts))) {
    const path = join(dir, name);
    const tmp = `${path}.tmp-${process.pid}`;
    writeFileSync(tmp, text, { mode: 0o644 });
    renameSync(tmp, path);
    files.push(path);
  }
  return { dir, files };
}

/** daemon-reload, then enable --now the router and the timer. Returns systemctl's complaint, or null. */
export function enableUnits(env: NodeJS.ProcessEnv = process.env): string | null {
  for (const args of [
    ["--user", "daemon-reload"],
    ["--user", "enable", "--now", "stallguard.service", "stallguard-watchdog.timer"],
  ]) {
    const r = spawnSync("systemctl", args, { encoding: "utf8", timeout: 30_000, env });
    if (r.error) return `systemctl: ${r.error.message}`;
    if (r.status !== 0) return `systemctl ${args.join(" ")}: ${(r.stderr || r.stdout).trim()}`;
  }
  return null;
}

/** The bundled CLI (dist/stallguard.mjs), whether running bundled or from source. */
export function defaultBinPath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, "stallguard.mjs"), join(here, "..", "..", "dist", "stallguard.mjs")];
  return candidates.find((c) => existsSync(c)) ?? (candidates[0] as string);
}

const meta = {
  name: "install-units",
  description:
    "Write the systemd user units (router + watchdog timer) into ~/.config/systemd/user; --enable starts them",
};

export default defineCommand({
  meta,
  args: {
    dir: stringArg("Write the units here instead"),
    config: stringArg("Config file to read watchdog.interval from"),
    enable: switchArg("Also daemon-reload and enable --now both units", false),
  },
  async run({ args, data }): Promise<number> {
    const io = data as CliIo;
    const bin = defaultBinPath();
    if (!existsSync(bin)) {
      warn(io, `stallguard: ${bin} not found; run npm run build first`);
      return 1;
    }
    const { loadWatchdogConfig } = await import("./watchdog.ts");
    const loaded = await loadWatchdogConfig(typeof args.config === "string" ? args.config : undefined, {
      dbPath: null,
      env: io.env,
    });
    if (!loaded.ok) {
      warn(io, `stallguard: ${loaded.error}`);
      return 1;
    }
    try {
      const { dir, files } = installUnits({
        binPath: bin,
        intervalMs: loaded.config.watchdog.interval,
        env: io.env,
        ...(typeof args.dir === "string" ? { dir: args.dir } : {}),
      });
      say(io, `wrote ${files.length} units to ${dir}`);
      for (const f of files) say(io, `  ${f}`);
      if (!args.enable) {
        say(
          io,
          "enable: systemctl --user daemon-reload && systemctl --user enable --now stallguard.service stallguard-watchdog.timer",
        );
        return 0;
      }
      const problem = enableUnits(io.env);
      if (problem) {
        warn(io, problem);
        return 1;
      }
      say(io, "enabled: stallguard.service, stallguard-watchdog.timer");
      return 0;
    } catch (err) {
      warn(io, `stallguard: ${(err as Error).message}`);
      return 1;
    }
  },
});
