import { describe, expect, it } from "vitest";
import { bashFacts, bashMemo, commits, runsTests, textEdit } from "./bash-call.ts";
import { configSchema } from "./config.ts";
import { policyFromConfig } from "./policy.ts";
import { type CallContext, toToolCall } from "./tool-call.ts";

const patterns = policyFromConfig(configSchema.parse({})).testPatterns;
const DIR = "/home/dev/repo";
const COMMANDS = [
  "cd /home/dev/repo && cat src/a.ts",
  "npx vitest run src/a.test.ts",
  "sed -i 's/a/b/' src/a.ts",
  "git commit -m 'x'",
  "cat <<'EOF' > notes.md\nhello\nEOF",
  "curl https://example.com/a.ts -o /tmp/x",
];

function ctx(memo: CallContext["bashMemo"]): CallContext {
  return {
    sessionId: "ses_a",
    parentId: null,
    agent: "build",
    time: 1,
    directory: DIR,
    testPatterns: patterns,
    bashMemo: memo,
  };
}

describe("a bash command of any size", () => {
  it("is read in time that grows with its length (a generated command of 20,000 steps)", {
    timeout: 10_000,
  }, () => {
    // Numbers were read by blanking every file across the whole command: over a minute for this one here.
    const steps = Array.from({ length: 20_000 }, (_, i) => `cd d${i} && sed -i s/a/b/ f${i}.py`);
    const facts = bashFacts(steps.join(" ; "), DIR, patterns, undefined);
    expect(facts.target).toMatch(/^sed -i/);
    expect(facts.nfp).toMatch(/^[0-9a-f]{64}$/);
    expect(bashFacts(steps.join(" ; "), DIR, patterns, undefined).nfp).toBe(facts.nfp);
  });
});

describe("a session's bash commands, read once each", () => {
  it("gives every call the ToolCall it gets without the memo, repeats included", () => {
    const memo = bashMemo(DIR, patterns);
    for (const round of [1, 2]) {
      for (const [i, command] of COMMANDS.entries()) {
        for (const exit of [0, 1]) {
          const raw = {
            tool: "bash",
            callId: `c${round}${i}`,
            args: { command, description: "d" },
            metadata: { exit },
            status: "completed" as const,
            output: "out",
          };
          expect(toToolCall(raw, ctx(memo))).toEqual(toToolCall(raw, ctx(null)));
        }
      }
    }
    expect(memo.facts.size).toBe(COMMANDS.length);
  });

  it("reads the commit, test and edit facts as the command says", () => {
    const memo = bashMemo(DIR, patterns);
    const facts = (c: string) => bashFacts(c, DIR, patterns, memo);
    expect(commits(facts("git commit -m 'x'"))).toBe(true);
    expect(runsTests(facts("npx vitest run src/a.test.ts"), patterns)).toBe(true);
    expect(textEdit(facts("sed -i 's/a/b/' src/a.ts"), DIR)).not.toBeNull();
    expect(textEdit(facts("cat src/a.ts"), DIR)).toBeNull();
    // Each call gets its own change object: a caller changing one cannot change another's.
    expect(textEdit(facts("sed -i 's/a/b/' src/a.ts"), DIR)).not.toBe(
      textEdit(facts("sed -i 's/a/b/' src/a.ts"), DIR),
    );
  });

  it("is not used for another directory or other test patterns", () => {
    const memo = bashMemo(DIR, patterns);
    const here = bashFacts("cat /home/dev/repo/a.ts", DIR, patterns, memo);
    const elsewhere = bashFacts("cat /home/dev/repo/a.ts", "/srv/other", patterns, memo);
    expect(elsewhere.nfp).not.toBe(here.nfp);
    expect(bashFacts("cat /home/dev/repo/a.ts", DIR, [/cat/], memo)).not.toBe(here);
    expect(memo.facts.size).toBe(1);
  });
});
