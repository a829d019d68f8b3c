// Thresholds for calibration come from the same files as everywhere else:
// config/config.yaml (defaults), config/config.local.yaml when present, then
// --config FILE, all through the core's parseConfig.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Config, formatConfigIssues, parseConfig } from "../../shared/index.ts";

/** The folder holding config/config.yaml: found upwards from this module (source tree or dist/). */
export function packageRoot(from: string = dirname(fileURLToPath(import.meta.url))): string | null {
  let dir = from;
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, "config", "config.yaml")) && existsSync(join(dir, "package.json"))) return dir;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return null;
}

export interface LoadedConfig {
  config: Config;
  sources: string[];
}

/** Loads the layers; throws an Error whose message lists every issue with its file and key path. */
export function loadConfig(opts: { configPath?: string | null; root?: string | null } = {}): LoadedConfig {
  const root = opts.root === undefined ? packageRoot() : opts.root;
  const layers: Array<{ source: string; text: string }> = [];
  if (root) {
    layers.push({
      source: "config/config.yaml",
      text: readFileSync(join(root, "config", "config.yaml"), "utf8"),
    });
    const local = join(root, "config", "config.local.yaml");
    if (existsSync(local))
      layers.push({ source: "config/config.local.yaml", text: readFileSync(local, "utf8") });
  }
  if (opts.configPath) {
    let text: string;
    try {
      text = readFileSync(opts.configPath, "utf8");
    } catch (err) {
      throw new Error(`--config: cannot read ${opts.configPath}: ${(err as Error).message}`);
    }
    layers.push({ source: opts.configPath, text });
  }
  const r = parseConfig(layers);
  if (!r.ok) throw new Error(formatConfigIssues(r.issues));
  return { config: r.config, sources: layers.map((l) => l.source) };
}
