import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sha256 } from "../shared/index.ts";
import { toolStartingOf } from "./events.ts";
import { hashFile, WriteProbe } from "./write-probe.ts";

/** tool.execute.before as the hook hands it on: through the event mapping (junk never reaches the probe). */
const beforeTool = async (p: WriteProbe, input: unknown, output: unknown) => {
  const call = toolStartingOf(input, output);
  if (call) await p.before(call);
};

const dir = mkdtempSync(join(tmpdir(), "sg-probe-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("hashFile", () => {
  it("hashes text the way the core hashes write content", async () => {
    writeFileSync(join(dir, "a.txt"), "hello\n");
    expect(await hashFile(join(dir, "a.txt"))).toBe(sha256("hello\n"));
  });
  it("null for a missing file, undefined for what it cannot read", async () => {
    expect(await hashFile(join(dir, "missing.txt"))).toBeNull();
    mkdirSync(join(dir, "sub"));
    expect(await hashFile(join(dir, "sub"))).toBeUndefined();
  });
});

describe("WriteProbe", () => {
  it("records the prior hash of write calls only, once, relative paths against the directory", async () => {
    writeFileSync(join(dir, "b.txt"), "old\n");
    const p = new WriteProbe(dir);
    await beforeTool(
      p,
      { tool: "write", sessionID: "s", callID: "c1" },
      { args: { filePath: "b.txt", content: "new" } },
    );
    await beforeTool(p, { tool: "read", sessionID: "s", callID: "c2" }, { args: { filePath: "b.txt" } });
    await beforeTool(
      p,
      { tool: "write", sessionID: "s", callID: "c3" },
      { args: { filePath: join(dir, "nope.txt") } },
    );
    expect(p.take("s", "c1")).toBe(sha256("old\n"));
    expect(p.take("s", "c1")).toBeUndefined();
    expect(p.take("s", "c2")).toBeUndefined();
    expect(p.take("s", "c3")).toBeNull();
  });
  it("ignores malformed input and stays bounded", async () => {
    const p = new WriteProbe(dir, 10, async () => "h");
    await beforeTool(p, null, null);
    await beforeTool(p, { tool: "write" }, { args: {} });
    for (let i = 0; i < 100; i++)
      await beforeTool(p, { tool: "write", sessionID: "s", callID: `c${i}` }, { args: { filePath: "x" } });
    expect(p.size).toBe(10);
  });
});
