// The one CLI entry (dist/stallguard.mjs): runs the verb, lets stdout and
// stderr drain (a piped --json document is never cut short), then exits with
// the verb's code. The only place that ends the process.
import { processIo } from "./io.ts";
import { run } from "./run.ts";

const code = await run(process.argv.slice(2), processIo());
let pending = 2;
const done = () => {
  pending--;
  if (pending === 0) process.exit(code);
};
process.stdout.write("", done);
process.stderr.write("", done);
