// runCalibrate in-process with its stdout and stderr captured, for the
// calibrate unit tests.
import { type CalibrateOptions, runCalibrate } from "../../router-ext/calibrate/run.ts";

export async function calibrateCaptured(
  opts: CalibrateOptions,
  io: { env?: NodeJS.ProcessEnv; tty?: boolean; now?: number } = {},
) {
  let out = "";
  let err = "";
  const outcome = await runCalibrate(opts, {
    stdout: { write: (s: string) => (out += s) },
    stderr: { write: (s: string) => (err += s), isTTY: io.tty ?? false },
    env: io.env ?? {},
    now: () => io.now ?? 0,
  });
  return { ...outcome, out, err };
}
