// Token files created by several processes at the same instant (serve started
// twice on one HOME, serve and the doctor): every one must end with the same
// whole token, none may die reading a file another has created but not yet
// written. Real processes, released together by a spin on the wall clock.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleChild } from "../test/helpers/child-bundle.ts";

const CHILDREN = 8;
const ROUNDS = 40;

describe("readOrCreateSecret across processes", () => {
  let dir: string;
  const children: Array<{ proc: ChildProcess; next: () => Promise<{ value?: string; error?: string }> }> = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-secret-race-"));
    const child = await bundleChild("secret-race-child.ts", join(dir, "child.mjs"));
    for (let i = 0; i < CHILDREN; i++) {
      const proc = spawn(process.execPath, [child], { stdio: ["pipe", "pipe", "inherit"] });
      const answers = createInterface({ input: proc.stdout as NodeJS.ReadableStream })[
        Symbol.asyncIterator
      ]();
      children.push({ proc, next: async () => JSON.parse((await answers.next()).value as string) });
    }
  });
  afterAll(() => {
    for (const c of children) c.proc.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`${CHILDREN} processes x ${ROUNDS} fresh files: all read the one whole token, none fails, no temporary file left`, {
    timeout: 60_000,
  }, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const folder = join(dir, `home${round}`, "stallguard");
      const path = join(folder, "plugin.token");
      const goAt = Date.now() + 30;
      for (const c of children) c.proc.stdin?.write(`${path} ${goAt}\n`);
      const got = await Promise.all(children.map((c) => c.next()));
      expect(
        got.filter((g) => g.error !== undefined),
        `round ${round}`,
      ).toEqual([]);
      expect(new Set(got.map((g) => g.value))).toEqual(new Set([readFileSync(path, "utf8")]));
      expect(readdirSync(folder)).toEqual(["plugin.token"]);
    }
  });
});
