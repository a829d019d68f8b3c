// Where opencode 1.18 keeps its files, resolved as `opencode db path` does:
// its data dir is $XDG_DATA_HOME/opencode (default ~/.local/share/opencode);
// the database is $OPENCODE_DB when set (absolute, or relative to the data
// dir; ":memory:" is no file at all), else opencode.db in the data dir.
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";

/** `$XDG_DATA_HOME/opencode`, defaulting to `~/.local/share/opencode`. */
export function opencodeDataDir(env: NodeJS.ProcessEnv = process.env): string {
  const data = env.XDG_DATA_HOME?.startsWith("/")
    ? env.XDG_DATA_HOME
    : join(env.HOME || homedir(), ".local", "share");
  return join(data, "opencode");
}

/** The database file opencode uses with this environment; null when it keeps none (`:memory:`). */
export function opencodeDbPath(env: NodeJS.ProcessEnv = process.env): string | null {
  const set = env.OPENCODE_DB;
  if (set === ":memory:") return null;
  if (set) return isAbsolute(set) ? set : join(opencodeDataDir(env), set);
  return join(opencodeDataDir(env), "opencode.db");
}
