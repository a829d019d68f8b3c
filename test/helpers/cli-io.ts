// A CliIo that records what a verb prints, for tests that call the CLI as a
// function (router-ext/cli/run.ts); stop() is the signal a long-running verb waits for.
import { join } from "node:path";
import type { CliIo } from "../../router-ext/cli/io.ts";

/** HOME and the XDG state and data dirs under `home`; `env` adds to (or overrides) them. */
export function testIo(home: string, env: NodeJS.ProcessEnv = {}) {
  let out = "";
  let err = "";
  let stop: (signal: string) => void = () => undefined;
  const io: CliIo = {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s) },
    env: { HOME: home, XDG_STATE_HOME: join(home, "state"), XDG_DATA_HOME: join(home, "data"), ...env },
    now: Date.now,
    stopped: new Promise((r) => {
      stop = r;
    }),
  };
  return { io, out: () => out, err: () => err, stop: (s: string) => stop(s) };
}
