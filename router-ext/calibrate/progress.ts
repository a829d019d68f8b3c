// Progress on stderr: a redrawn bar on a terminal, a few plain lines otherwise.
export interface Progress {
  step(label: string, done: number, total: number): void;
  note(line: string): void;
  done(): void;
}

export function createProgress(
  stream: { write(s: string): unknown; isTTY?: boolean } = process.stderr,
  opts: { quiet?: boolean } = {},
): Progress {
  if (opts.quiet) return { step() {}, note() {}, done() {} };
  let drawn = false;
  let lastDraw = 0;
  const clear = () => {
    if (drawn) stream.write("\r\x1b[2K");
    drawn = false;
  };
  return {
    step(label, done, total) {
      if (!stream.isTTY) return;
      const now = Date.now();
      if (done < total && now - lastDraw < 80) return;
      lastDraw = now;
      const width = 30;
      const filled = total ? Math.round((done / total) * width) : width;
      stream.write(`\r\x1b[2K${label} [${"#".repeat(filled)}${" ".repeat(width - filled)}] ${done}/${total}`);
      drawn = true;
    },
    note(line) {
      clear();
      stream.write(`${line}\n`);
    },
    done() {
      clear();
    },
  };
}
