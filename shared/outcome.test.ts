import { describe, expect, it } from "vitest";
import { maskVolatile, outcomeHash } from "./outcome.ts";

describe("outcome: the same answer across reruns", () => {
  it("masks what changes between identical runs", () => {
    const a = "FAILED tests/t.py::test_x - assert 1 == 2\n1 failed in 0.53s";
    const b = "FAILED tests/t.py::test_x - assert 1 == 2\n1 failed in 0.61s";
    expect(outcomeHash("completed", 1, a)).toBe(outcomeHash("completed", 1, b));
    expect(maskVolatile("/bin/bash: line 334: cd: fastxml/: No such file")).toBe(
      maskVolatile("/bin/bash: line 352: cd: fastxml/: No such file"),
    );
    expect(maskVolatile("<Foo object at 0x7f3a2b1c>")).toBe(maskVolatile("<Foo object at 0x7f99aa00>"));
    expect(maskVolatile("at 2026-12-03T16:42:18Z done")).toBe(maskVolatile("at 2026-12-03T17:01:02Z done"));
    expect(maskVolatile("commit 4482213d6ab81a96db")).toBe(maskVolatile("commit 9f1e0c2b7d3a55e1aa"));
  });

  it("keeps what an agent may be waiting on: counters, percentages, results", () => {
    expect(maskVolatile("3/10 jobs done")).not.toBe(maskVolatile("5/10 jobs done"));
    expect(maskVolatile("build 45%")).not.toBe(maskVolatile("build 90%"));
    expect(outcomeHash("completed", 1, "5 passed, 1 failed")).not.toBe(
      outcomeHash("completed", 1, "6 passed, 0 failed"),
    );
    expect(outcomeHash("completed", 0, "status: queued")).not.toBe(
      outcomeHash("completed", 0, "status: running"),
    );
  });

  it("status and exit code are part of the answer", () => {
    expect(outcomeHash("completed", 0, "x")).not.toBe(outcomeHash("completed", 1, "x"));
    expect(outcomeHash("completed", null, "x")).not.toBe(outcomeHash("error", null, "x"));
    expect(outcomeHash("completed", 0, "x")).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe("outcome of a long answer", () => {
  const body = Array.from({ length: 400 }, (_, i) => `line ${i}: some output text of a long run`).join("\n");
  it("masks its first and last lines: a changed duration at the end is the same answer", () => {
    expect(outcomeHash("completed", 1, `${body}\n3 failed in 12.41s`)).toBe(
      outcomeHash("completed", 1, `${body}\n3 failed in 9.07s`),
    );
  });
  it("a changed line in the middle is another answer", () => {
    const changed = body.replace("line 200: some", "line 200: other");
    expect(outcomeHash("completed", 0, changed)).not.toBe(outcomeHash("completed", 0, body));
  });
});

describe("outcome of an answer on one long line (a minified page, one-line JSON)", () => {
  const line = (rows: number) =>
    `{"items":[${Array.from({ length: rows }, (_, i) => `{"n":"item ${i}"}`).join(",")}]}`;
  it("masks it whole up to 256 KB: a changed duration or time is the same answer", () => {
    const text = line(10_000); // about 180 KB
    expect(outcomeHash("completed", 0, `took 12ms ${text} at 10:00:01`)).toBe(
      outcomeHash("completed", 0, `took 9ms ${text} at 10:00:07`),
    );
    expect(outcomeHash("completed", 0, text.replace('"item 5000"', '"item x"'))).not.toBe(
      outcomeHash("completed", 0, text),
    );
  });
  it("hashes it as it is past 256 KB (masking 5 MB held the event loop): only the same text is the same answer", () => {
    const text = line(20_000); // about 370 KB
    expect(outcomeHash("completed", 0, `took 12ms ${text}`)).toBe(
      outcomeHash("completed", 0, `took 12ms ${text}`),
    );
    expect(outcomeHash("completed", 0, `took 12ms ${text}`)).not.toBe(
      outcomeHash("completed", 0, `took 9ms ${text}`),
    );
  });
});

describe("ids in an answer", () => {
  it("masks a word of 8 or more lower-case hex characters with a digit, and nothing shorter or wider", () => {
    expect(maskVolatile("sha 1a2b3c4d and deadbee1 and abcdefab12")).toBe("sha <id> and <id> and <id>");
    expect(maskVolatile("a1b2c3d short, deadbeefcafe no digit, 1A2B3C4D5E upper, 1a2b3c4dz word")).toBe(
      "a1b2c3d short, deadbeefcafe no digit, 1A2B3C4D5E upper, 1a2b3c4dz word",
    );
  });
  it("leaves a text without a digit as it is", () => {
    const text = "no numbers here: only words, deadbeef and 0x";
    expect(maskVolatile(text)).toBe(text);
  });
});
