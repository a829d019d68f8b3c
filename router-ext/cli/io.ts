// What a CLI verb may touch of its process, passed in so a verb is a plain
// async function of (argv, io) -> exit code, tested by calling it.

export interface CliIo {
  stdout: { write(s: string): unknown; isTTY?: boolean };
  stderr: { write(s: string): unknown; isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  now: () => number;
  /** Resolves with the signal's name when the process is asked to stop (long-running verbs wait on it). */
  stopped: Promise<string>;
}

/** The io of the running process. */
export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    now: Date.now,
    stopped: new Promise((resolve) => {
      const on = (signal: NodeJS.Signals) => () => {
        process.off("SIGINT", onInt);
        process.off("SIGTERM", onTerm);
        resolve(signal);
      };
      const onInt = on("SIGINT");
      const onTerm = on("SIGTERM");
      process.once("SIGINT", onInt);
      process.once("SIGTERM", onTerm);
    }),
  };
}

/** A line on stdout / stderr. */
export const say = (io: CliIo, line: string) => io.stdout.write(`${line}\n`);
export const warn = (io: CliIo, line: string) => io.stderr.write(`${line}\n`);
