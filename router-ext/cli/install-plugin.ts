// `stallguard install-plugin [--project DIR]`: copies the bundled opencode
// plugin (dist/plugin/stallguard.js) into opencode's global plugin folder
// (~/.config/opencode/plugins/) or a project's .opencode/plugins/, prints the
// installed version, and says when it replaced another copy.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { defineCommand } from "citty";
import { stringArg } from "./args.ts";
import { type CliIo, say, warn } from "./io.ts";
import { VERSION } from "./version.ts";

export interface InstallOptions {
  /** The bundle to install; default: the one next to this CLI (dist/plugin/stallguard.js). */
  source?: string;
  /** Install into DIR/.opencode/plugins instead of the global config dir. */
  project?: string | null;
  env: Record<string, string | undefined>;
}

export interface InstallResult {
  ok: boolean;
  /** Exit code for the CLI: 0 installed, 1 failed. */
  code: number;
  lines: string[];
  target: string | null;
  version: string | null;
}

const FILE = "stallguard.js";

/** Where the bundle lives relative to this module, bundled (dist/) or run from source. */
export function defaultSource(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, "plugin", FILE), join(here, "..", "..", "dist", "plugin", FILE)];
  return candidates.find((c) => existsSync(c)) ?? (candidates[0] as string);
}

/** opencode's global config dir: $XDG_CONFIG_HOME/opencode, else ~/.config/opencode. */
export function globalConfigDir(env: Record<string, string | undefined>): string {
  const xdg = env.XDG_CONFIG_HOME;
  const home = env.HOME || homedir();
  return join(xdg?.startsWith("/") ? xdg : join(home, ".config"), "opencode");
}

/** First line of an installed copy: names its version without running it. */
const HEADER = "// stallguard-plugin ";

/**
 * The version of a bundle, read from its text (never by running it): the
 * header line this command writes, or the version constant esbuild inlines.
 */
export function bundleVersion(text: string): string | null {
  const header = text.startsWith(HEADER) ? /^\/\/ stallguard-plugin (\S+)/.exec(text)?.[1] : undefined;
  if (header) return header;
  return /\bPLUGIN_VERSION = (?:true \? )?"([^"\s]{1,64})"/.exec(text)?.[1] ?? null;
}

export function installPlugin(opts: InstallOptions): InstallResult {
  const source = resolve(opts.source ?? defaultSource());
  const fail = (line: string): InstallResult => ({
    ok: false,
    code: 1,
    lines: [line],
    target: null,
    version: null,
  });
  if (!existsSync(source)) return fail(`no plugin bundle at ${source}: run \`npm run build\` first`);
  const text = readFileSync(source, "utf8");
  const version = bundleVersion(text) ?? (opts.source === undefined && VERSION !== "dev" ? VERSION : null);
  if (!version) return fail(`${source} is not a stallguard plugin bundle (no version found)`);

  const configDir = opts.project ? join(resolve(opts.project), ".opencode") : globalConfigDir(opts.env);
  const dir = join(configDir, "plugins");
  const target = join(dir, FILE);
  const body = text.startsWith(HEADER) ? text.slice(text.indexOf("\n") + 1) : text;
  const bytes = `${HEADER}${version}\n${body}`;
  const lines: string[] = [];

  if (existsSync(target)) {
    const old = readFileSync(target, "utf8");
    const oldVersion = bundleVersion(old);
    if (old === bytes) {
      lines.push(`stallguard plugin ${version} is already installed at ${target}`);
      return { ok: true, code: 0, lines, target, version };
    }
    const label = oldVersion ?? "unknown version";
    const kind =
      oldVersion && oldVersion === version ? "a different build of the same version" : "an older copy";
    lines.push(`replaced ${kind} (${label}) at ${target}`);
  }
  try {
    mkdirSync(dir, { recursive: true });
    const tmp = `${target}.tmp-${process.pid}`;
    writeFileSync(tmp, bytes);
    renameSync(tmp, target);
  } catch (err) {
    return fail(`cannot write ${target}: ${(err as Error).message}`);
  }
  lines.push(`installed stallguard plugin ${version} to ${target}`);
  // opencode loads both plugin/ and plugins/: a second copy would run twice.
  const stray = join(configDir, "plugin", FILE);
  if (existsSync(stray)) lines.push(`warning: another copy at ${stray} would also load; remove it`);
  lines.push("restart opencode to load it");
  return { ok: true, code: 0, lines, target, version };
}

export default defineCommand({
  meta: {
    name: "install-plugin",
    description:
      "Install the opencode plugin into ~/.config/opencode/plugins (or a project's .opencode/plugins)",
  },
  args: {
    project: stringArg("Install into DIR/.opencode/plugins instead"),
    from: stringArg("The bundle to install (default: the one shipped with this CLI)"),
  },
  run({ args, data }): number {
    const io = data as CliIo;
    const result = installPlugin({
      ...(typeof args.from === "string" ? { source: args.from } : {}),
      project: typeof args.project === "string" ? args.project : null,
      env: io.env,
    });
    for (const line of result.lines) (result.ok ? say : warn)(io, line);
    return result.code;
  },
});
