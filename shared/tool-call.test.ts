import { describe, expect, it } from "vitest";
import { canonicalJson } from "./canonical-json.ts";
import { configSchema } from "./config.ts";
import { sha256, shortHash } from "./hash.ts";
import { policyFromConfig } from "./policy.ts";
import { type CallContext, patchFiles, type RawToolCall, toToolCall } from "./tool-call.ts";
import type { ToolCall } from "./types.ts";

const policy = policyFromConfig(configSchema.parse({}));
const DIR = "/home/dev/repo";

function call(
  tool: string,
  args: unknown,
  metadata: unknown = {},
  status: RawToolCall["status"] = "completed",
  ctx: Partial<CallContext> = {},
): ToolCall {
  return toToolCall(
    { tool, callId: "call_1", args, metadata, status },
    {
      sessionId: "ses_a",
      parentId: null,
      agent: "build",
      time: 1000,
      directory: DIR,
      testPatterns: policy.testPatterns,
      ...ctx,
    },
  );
}
const bash = (command: string, exit = 0, ctx: Partial<CallContext> = {}) =>
  call("bash", { command, description: "d" }, { exit, output: "", truncated: false }, "completed", ctx);

describe("exact fingerprint", () => {
  it("is sha256 of tool + canonical JSON of the args", () => {
    const args = { filePath: "/x/a.ts", offset: 10, limit: 5 };
    expect(call("read", args).fp).toBe(sha256(`read\u0000${canonicalJson(args)}`));
    expect(call("read", args).fp).toMatch(/^[0-9a-f]{64}$/);
  });

  it("is stable under key order at every depth", () => {
    const a = call("task", { b: 1, a: { y: [1, { q: 1, p: 2 }], x: "s" } });
    const b = call("task", { a: { x: "s", y: [1, { p: 2, q: 1 }] }, b: 1 });
    expect(a.fp).toBe(b.fp);
  });

  it("differs for a different tool, a different value, or a different array order", () => {
    const base = call("grep", { pattern: "foo", path: "src" }).fp;
    expect(call("glob", { pattern: "foo", path: "src" }).fp).not.toBe(base);
    expect(call("grep", { pattern: "fooo", path: "src" }).fp).not.toBe(base);
    expect(call("task", { list: [1, 2] }).fp).not.toBe(call("task", { list: [2, 1] }).fp);
  });

  it("canonical JSON sorts keys and keeps arrays in order", () => {
    expect(canonicalJson({ b: 1, a: [3, { d: 1, c: 2 }] })).toBe('{"a":[3,{"c":2,"d":1}],"b":1}');
    expect(canonicalJson(undefined)).toBe("null");
    // Nesting past 64 levels is cut, not followed: a value 100,000 deep would overflow the stack.
    let deep: unknown = [];
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(canonicalJson(deep)).toBe(`${"[".repeat(64)}"<deeper>"${"]".repeat(64)}`);
    expect(call("edit", { filePath: "a.ts", deep }).fp).toMatch(/^[0-9a-f]{64}$/);
  });

  it("canonical JSON orders keys as sort() does: code units, integer-like keys in numeric order", () => {
    const bySort = (v: unknown): unknown =>
      Array.isArray(v)
        ? v.map(bySort)
        : v !== null && typeof v === "object"
          ? Object.fromEntries(
              Object.keys(v)
                .sort()
                .map((k) => [k, bySort((v as Record<string, unknown>)[k])]),
            )
          : v;
    const keys = ["b", "a", "B", "_", "\u00e9", "10", "2", "a1", "a0", "Z", "aa", "$"];
    for (let n = 1; n <= keys.length; n++) {
      const value = Object.fromEntries(
        keys.slice(0, n).map((k, i) => [k, { [k]: i, y: [i, { q: 1, p: 2 }], x: null }]),
      );
      expect(canonicalJson(value)).toBe(JSON.stringify(bySort(value)));
    }
  });
});

describe("normalized fingerprint: read", () => {
  it("keys a read on file plus offset/limit: slices are distinct, the same slice collides", () => {
    const slice = (offset?: number, limit?: number) =>
      call("read", { filePath: `${DIR}/big.py`, ...(offset !== undefined ? { offset } : {}), limit }).nfp;
    const slices = [0, 100, 200, 300, 400].map((o) => slice(o, 100));
    expect(new Set(slices).size).toBe(5);
    expect(slice(100, 100)).toBe(slices[1]);
    expect(slice(100, 50)).not.toBe(slices[1]);
    expect(slice()).not.toBe(slices[0]);
  });

  it("treats the absolute and the directory-relative path of one file as the same file", () => {
    expect(call("read", { filePath: `${DIR}/a.py` }).nfp).toBe(call("read", { filePath: "a.py" }).nfp);
    expect(call("read", { filePath: `${DIR}/a.py` }).nfp).not.toBe(call("read", { filePath: "b.py" }).nfp);
  });

  it("a re-read with the same slice has a different exact fp only when args differ", () => {
    const a = call("read", { filePath: "a.py", offset: 1, limit: 9 });
    const b = call("read", { limit: 9, offset: 1, filePath: "a.py" });
    expect(a.fp).toBe(b.fp);
    expect(a.nfp).toBe(b.nfp);
  });
});

// 28 differently-worded whole-file reads of one file: the incident #8 shape.
// Rewordings of one read of .omo/boulder.json (the spec's Atlas loop re-read
// it 28 times in different words): the same viewer action on the same file.
const BOULDER_VARIANTS = [
  "cat .omo/boulder.json",
  "cat ./.omo/boulder.json",
  "cat  .omo/boulder.json",
  "cat\t.omo/boulder.json",
  "cat '.omo/boulder.json'",
  'cat ".omo/boulder.json"',
  `cat ${DIR}/.omo/boulder.json`,
  `cd ${DIR} && cat .omo/boulder.json`,
  `cd ${DIR}; cat .omo/boulder.json`,
  `cd ${DIR}\ncat .omo/boulder.json`,
  `cd ${DIR} && cat ./.omo/boulder.json 2>/dev/null`,
  "cat .omo/boulder.json 2>/dev/null",
  "cat .omo/boulder.json 2>&1",
  "less .omo/boulder.json",
  "more .omo/boulder.json",
  "bat .omo/boulder.json",
  "nl .omo/boulder.json",
  "cat -- .omo/boulder.json",
  "cat -n .omo/boulder.json",
  "FOO=1 cat .omo/boulder.json",
  "LC_ALL=C PAGER=cat cat .omo/boulder.json",
  "env TERM=dumb cat .omo/boulder.json",
  "timeout 5 cat .omo/boulder.json",
  "command cat .omo/boulder.json",
  "nohup cat .omo/boulder.json",
  "sed -n p .omo/boulder.json",
  "cat .omo/boulder.json | cat",
  `export X=2 && cd ${DIR} && cat .omo/boulder.json`,
];

describe("normalized fingerprint: bash", () => {
  it("collapses 28 differently-worded reads of .omo/boulder.json to one key", () => {
    expect(BOULDER_VARIANTS).toHaveLength(28);
    expect(new Set(BOULDER_VARIANTS).size).toBe(28);
    const keys = BOULDER_VARIANTS.map((c) => bash(c).nfp);
    const exact = BOULDER_VARIANTS.map((c) => bash(c).fp);
    expect(new Set(exact).size).toBe(28);
    const odd = BOULDER_VARIANTS.filter((_, i) => keys[i] !== keys[0]);
    expect(odd).toEqual([]);
  });

  it("keeps the program: rm, python and cat of one file are three actions (class 3)", () => {
    const keys = ["rm reproduce.py", "python reproduce.py", "cat reproduce.py", "git add reproduce.py"].map(
      (c) => bash(c).nfp,
    );
    expect(new Set(keys).size).toBe(4);
    // each still collapses with its own rewordings
    expect(bash(`cd ${DIR} && python3 ./reproduce.py 2>&1`).nfp).toBe(bash("python reproduce.py").nfp);
    expect(bash("rm -f reproduce.py").nfp).toBe(bash(`rm ${DIR}/reproduce.py`).nfp);
  });

  it("keeps what a search or a script asks: other patterns and other snippets are other calls", () => {
    const f = ".omo/boulder.json";
    expect(bash(`grep -n status ${f}`).nfp).not.toBe(bash(`grep -n pr_url ${f}`).nfp);
    expect(bash(`grep -n status ${f}`).nfp).toBe(bash(`cd ${DIR} && grep status ./${f}`).nfp);
    expect(bash(`jq .status ${f}`).nfp).not.toBe(bash(`jq .pr_url ${f}`).nfp);
    expect(bash("python3 -c 'print(1)'").nfp).not.toBe(bash("python3 -c 'print(2)'").nfp);
    expect(bash(`jq . ${f}`).nfp).not.toBe(bash(`cat ${f}`).nfp);
  });

  it("does not collapse commands on a different file", () => {
    const boulder = bash("cat .omo/boulder.json").nfp;
    for (const c of [
      "cat .omo/boulder2.json",
      "cat .omo/plans/plan.md",
      "cat boulder.json",
      "cat .omo/boulder.json .omo/plans/plan.md",
      "cd other && cat .omo/boulder.json.bak",
    ])
      expect(bash(c).nfp, c).not.toBe(boulder);
  });

  it("keys a slice by its numbers: same slice reworded collides, another slice does not", () => {
    const head100 = [
      "head -n 100 .omo/boulder.json",
      "head -100 .omo/boulder.json",
      "head -n100 .omo/boulder.json",
      "cat .omo/boulder.json | head -n 100",
      "FOO=7 head -n 100 .omo/boulder.json 2>&1",
      `cd ${DIR} && head -n 100 '.omo/boulder.json'`,
    ].map((c) => bash(c).nfp);
    expect(new Set(head100).size).toBe(1);
    expect(bash("head -n 200 .omo/boulder.json").nfp).not.toBe(head100[0]);
    expect(bash("head -n5 .omo/boulder.json").nfp).not.toBe(bash("head -n6 .omo/boulder.json").nfp);
    expect(bash("cat .omo/boulder.json").nfp).not.toBe(head100[0]);

    const sed = (r: string) => bash(`sed -n ${r} src/app.py`).nfp;
    expect(sed("1,100p")).toBe(sed("'1,100p'"));
    expect(sed("1,100p")).toBe(bash(`sed -n "1,100p" ${DIR}/src/app.py`).nfp);
    expect(sed("1,100p")).not.toBe(sed("1,200p"));
    expect(sed("101,200p")).not.toBe(sed("1,200p"));
    expect(bash("tail -n 20 log.txt").nfp).not.toBe(bash("tail -n 30 log.txt").nfp);
  });

  it("keys a command without files on its normalized words", () => {
    expect(bash("npm test").nfp).toBe(bash("CI=1 npm   test").nfp);
    expect(bash("npm test").nfp).not.toBe(bash("npm run build").nfp);
  });

  it("uses the same normalized key for a failing and a passing run of one command", () => {
    expect(bash("pytest tests/test_a.py", 1).nfp).toBe(bash("pytest tests/test_a.py", 0).nfp);
    expect(bash("pytest tests/test_a.py", 1).fp).toBe(bash("pytest tests/test_a.py", 0).fp);
  });
});

describe("normalized fingerprint: edit, write, patch, grep, glob", () => {
  it("keys edit and write on the file, not on the text", () => {
    const e1 = call("edit", { filePath: "a.py", oldString: "x", newString: "y" });
    const e2 = call("edit", { filePath: `${DIR}/a.py`, oldString: "p", newString: "q" });
    expect(e1.nfp).toBe(e2.nfp);
    expect(e1.fp).not.toBe(e2.fp);
    expect(call("edit", { filePath: "b.py", oldString: "x", newString: "y" }).nfp).not.toBe(e1.nfp);
    const w1 = call("write", { filePath: "a.py", content: "1" });
    const w2 = call("write", { filePath: "a.py", content: "2" });
    expect(w1.nfp).toBe(w2.nfp);
    expect(w1.nfp).not.toBe(e1.nfp);
  });

  it("keys a patch on its files, from metadata.files or from the patch headers", () => {
    const text = (files: string[]) =>
      `*** Begin Patch\n${files.map((f) => `*** Update File: ${f}\n@@\n-a\n+b`).join("\n")}\n*** End Patch`;
    const p1 = call("apply_patch", { patchText: text(["src/a.ts", "src/b.ts"]) });
    const p2 = call("apply_patch", { patchText: text(["src/b.ts", "src/a.ts"]) });
    const p3 = call(
      "apply_patch",
      { patchText: "x" },
      { files: [{ relativePath: "src/a.ts" }, { filePath: "src/b.ts" }] },
    );
    const p4 = call("apply_patch", { patchText: text(["src/a.ts"]) });
    expect(p1.nfp).toBe(p2.nfp);
    expect(p1.nfp).toBe(p3.nfp);
    expect(p4.nfp).not.toBe(p1.nfp);
    expect(p1.target).toBe("src/a.ts +1");
    expect(p4.target).toBe("src/a.ts");
    expect(patchFiles("--- a/x.py\n+++ b/x.py\n@@\n-1\n+2\n")).toEqual(["x.py"]);
  });

  it("keys grep and glob on path plus a hash of the pattern", () => {
    const g = (pattern: string, path?: string, tool = "grep") =>
      call(tool, { pattern, ...(path ? { path } : {}) });
    expect(g("TODO", "src").nfp).toBe(g("TODO", `${DIR}/src`).nfp);
    expect(g("TODO", "src").nfp).not.toBe(g("FIXME", "src").nfp);
    expect(g("TODO", "src").nfp).not.toBe(g("TODO", "lib").nfp);
    expect(g("TODO", "src").nfp).not.toBe(g("TODO", "src", "glob").nfp);
    expect(g("TODO", "src").target).toBe(`src #${shortHash("TODO")}`);
    expect(g("**/*.ts", undefined, "glob").target).toBe(`. #${shortHash("**/*.ts")}`);
  });
});

describe("targets are coarse and redacted", () => {
  it("uses the file path for read, edit, write and patch, relative to the directory, home as ~", () => {
    expect(call("read", { filePath: `${DIR}/src/x.py` }).target).toBe("src/x.py");
    expect(call("edit", { filePath: "/home/alice/other/x.py", oldString: "a", newString: "b" }).target).toBe(
      "~/other/x.py",
    );
    expect(call("write", { filePath: "/Users/bob/x.py", content: "c" }).target).toBe("~/x.py");
    expect(call("read", { filePath: "/root/.bashrc" }).target).toBe("~/.bashrc");
  });

  it("uses a bash command's first two tokens after env assignments and set-up prefixes", () => {
    expect(bash("pytest tests/test_a.py -k foo").target).toBe("pytest tests/test_a.py");
    expect(bash("TOKEN=abc API_KEY=zzz npm test").target).toBe("npm test");
    expect(bash(`cd ${DIR} && git status`).target).toBe("git status");
    expect(bash("sudo ls /etc").target).toBe("ls /etc");
    expect(bash("time nice -n 5 npm test").target).toBe("npm test");
    expect(bash("curl --header=Authorization x").target).toBe("curl --header=<value>");
    expect(bash('echo "a private sentence the user wrote"').target).toBe("echo <text>");
    expect(bash("").target).toBe("(empty)");
  });

  it("never keeps a secret-looking word in a bash target", () => {
    expect(bash("echo sk-abcdefghijklmnopqrstuvwx").target).toBe("echo <redacted>");
    expect(bash("curl https://user:pa55word@example.com/x").target).toBe("curl <redacted>");
    expect(bash("ghp_abcdefghijklmnop1234 push").target).toBe("<redacted> push");
  });

  it("uses the sub-agent type for task, a fixed word for todos, the host for webfetch", () => {
    expect(call("task", { subagent_type: "explore", prompt: "private", description: "d" }).target).toBe(
      "agent:explore",
    );
    expect(call("todowrite", { todos: [{ content: "private", status: "pending" }] }).target).toBe("todos");
    expect(call("webfetch", { url: "https://u:p@docs.example.com/a?token=1" }).target).toBe(
      "docs.example.com",
    );
    expect(call("webfetch", { url: "not a url" }).target).toBe("?");
  });
});

// Property-style: many commands with secrets at every position; none may show up anywhere.
describe("privacy property: no secret or content in any field of a tool call", () => {
  let seed = 12345;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const alnum = (n: number) => {
    const cs = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789";
    let s = "";
    for (let i = 0; i < n; i++) s += cs[Math.floor(rand() * cs.length)];
    return `${s}7q`;
  };
  const secretShapes: Array<() => string> = [
    () => `sk-${alnum(24)}`,
    () => `sk_live_${alnum(24)}`,
    () => `ghp_${alnum(30)}`,
    () => `github_pat_${alnum(30)}`,
    () => `xoxb-${alnum(20)}`,
    () => `AKIA${alnum(16).toUpperCase()}`,
    () => `AIza${alnum(30)}`,
    () => `glpat-${alnum(20)}`,
    () => `hf_${alnum(30)}`,
    () => `eyJ${alnum(40)}`,
    () => alnum(32),
  ];
  const programs = ["curl", "npm", "git", "python3", "node", "echo", "./deploy.sh", "psql", "docker", "gh"];

  function sample(): { command: string; secrets: string[] } {
    const secret = pick(secretShapes)();
    const envValue = `v${alnum(6)}`; // short values in env assignments are secrets too
    const shape = Math.floor(rand() * 9);
    const prog = pick(programs);
    switch (shape) {
      case 0:
        return { command: `TOKEN=${envValue} ${prog} run`, secrets: [envValue] };
      case 1:
        return {
          command: `API_KEY=${secret} OTHER=${envValue} ${prog} ${secret}`,
          secrets: [secret, envValue],
        };
      case 2:
        return { command: `${prog} ${secret} --flag`, secrets: [secret] };
      case 3:
        return { command: `${prog} --token=${secret}`, secrets: [secret] };
      case 4:
        return { command: `cd /home/alice/x && ${prog} "Bearer ${secret}"`, secrets: [secret, "alice"] };
      case 5:
        return {
          command: `${prog} https://deploy:${envValue}@example.com/hook`,
          secrets: [envValue, "deploy:"],
        };
      case 6:
        return { command: `export SECRET=${envValue}; ${prog} ${secret}`, secrets: [secret, envValue] };
      case 7:
        return { command: `${secret} ${prog}`, secrets: [secret] };
      default:
        return {
          command: `env PASSWORD=${envValue} timeout 9 ${prog} "${secret} and private words"`,
          secrets: [envValue, secret, "private words"],
        };
    }
  }

  it("holds for 600 generated bash commands (exit codes and statuses varied)", () => {
    for (let i = 0; i < 600; i++) {
      const { command, secrets } = sample();
      const exit = pick([0, 1, 2, 127]);
      const status = pick(["completed", "error"] as const);
      const c = call(
        "bash",
        { command, description: `run ${secrets[0]}` },
        { exit, output: secrets.join(" ") },
        status,
      );
      const json = JSON.stringify(c);
      for (const s of secrets) expect(json, `${command} -> ${c.target}`).not.toContain(s);
    }
  });

  it("holds for file tools: contents, old/new strings, patch text, prompts and outputs never appear", () => {
    const body = `PRIVATE-CONTENT-${alnum(10)}`;
    const calls = [
      call(
        "write",
        { filePath: "/home/alice/p/a.env", content: body },
        { exists: true, filepath: "/home/alice/p/a.env" },
      ),
      call(
        "edit",
        { filePath: "a.py", oldString: body, newString: `${body}2` },
        { diff: `--- a.py\n+++ a.py\n@@\n-${body}\n+${body}2\n` },
      ),
      call(
        "apply_patch",
        { patchText: `*** Begin Patch\n*** Update File: a.py\n@@\n-${body}\n+x\n*** End Patch` },
        { diff: `-${body}\n+x`, files: [{ relativePath: "a.py" }] },
      ),
      call("read", { filePath: "a.py" }, { preview: body, display: { path: "a.py" } }),
      call("grep", { pattern: body, path: "src", include: "*.py" }, { matches: body }),
      call("glob", { pattern: `**/${body}*` }),
      call("task", { subagent_type: "general", prompt: body, description: body }, { summary: body }),
      call("todowrite", { todos: [{ content: body, status: "pending", id: "1" }] }),
      call("webfetch", { url: `https://example.com/${body}?q=${body}` }, { output: body }),
      call("mcp_thing", { query: body }, { output: body }),
      call("read", { filePath: "gone.py" }, { error: body }, "error"),
    ];
    for (const c of calls) {
      const json = JSON.stringify(c);
      expect(json, c.tool).not.toContain(body);
      expect(json, c.tool).not.toContain("alice");
    }
  });
});
