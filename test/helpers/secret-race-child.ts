// A child process for the token-file race: for each line "PATH GO_AT" on stdin
// it spins until the wall clock reaches GO_AT (epoch ms, so every child starts
// at the same instant), calls readOrCreateSecret(PATH) and prints one JSON
// line, {"value": ...} or {"error": ...}.
// Usage: node secret-race-child.mjs (bundled by the test)
import { createInterface } from "node:readline";
import { readOrCreateSecret } from "../../io/secret-files.ts";

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const [path, goAt] = line.split(" ");
  const at = Number(goAt);
  while (performance.timeOrigin + performance.now() < at) {
    // Spin: a timer would wake the children milliseconds apart.
  }
  try {
    process.stdout.write(`${JSON.stringify({ value: readOrCreateSecret(path as string).value })}\n`);
  } catch (err) {
    process.stdout.write(`${JSON.stringify({ error: (err as Error).message })}\n`);
  }
});
