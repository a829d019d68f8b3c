// Builds opencode.db files for benches and tests: the session, message and
// part tables exactly as opencode 1.18.33 creates them (dumped from a db the
// real binary wrote), filled from export-shaped documents or with synthetic
// sessions of any size.
import Database from "better-sqlite3";

export const OPENCODE_SCHEMA = `
CREATE TABLE IF NOT EXISTS \`session\` (
  \`id\` text PRIMARY KEY, \`project_id\` text NOT NULL, \`workspace_id\` text, \`parent_id\` text,
  \`slug\` text NOT NULL, \`directory\` text NOT NULL, \`path\` text, \`title\` text NOT NULL,
  \`version\` text NOT NULL, \`share_url\` text, \`summary_additions\` integer, \`summary_deletions\` integer,
  \`summary_files\` integer, \`summary_diffs\` text, \`metadata\` text, \`cost\` real DEFAULT 0 NOT NULL,
  \`tokens_input\` integer DEFAULT 0 NOT NULL, \`tokens_output\` integer DEFAULT 0 NOT NULL,
  \`tokens_reasoning\` integer DEFAULT 0 NOT NULL, \`tokens_cache_read\` integer DEFAULT 0 NOT NULL,
  \`tokens_cache_write\` integer DEFAULT 0 NOT NULL, \`revert\` text, \`permission\` text, \`agent\` text,
  \`model\` text, \`time_created\` integer NOT NULL, \`time_updated\` integer NOT NULL,
  \`time_compacting\` integer, \`time_archived\` integer
);
CREATE TABLE IF NOT EXISTS \`message\` (
  \`id\` text PRIMARY KEY, \`session_id\` text NOT NULL, \`time_created\` integer NOT NULL,
  \`time_updated\` integer NOT NULL, \`data\` text NOT NULL,
  CONSTRAINT \`fk_message_session_id_session_id_fk\` FOREIGN KEY (\`session_id\`) REFERENCES \`session\`(\`id\`) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS \`part\` (
  \`id\` text PRIMARY KEY, \`message_id\` text NOT NULL, \`session_id\` text NOT NULL,
  \`time_created\` integer NOT NULL, \`time_updated\` integer NOT NULL, \`data\` text NOT NULL,
  CONSTRAINT \`fk_part_message_id_message_id_fk\` FOREIGN KEY (\`message_id\`) REFERENCES \`message\`(\`id\`) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS \`credential\` (\`id\` text PRIMARY KEY, \`data\` text NOT NULL);
CREATE INDEX IF NOT EXISTS \`message_session_time_created_id_idx\` ON \`message\` (\`session_id\`,\`time_created\`,\`id\`);
CREATE INDEX IF NOT EXISTS \`part_message_id_id_idx\` ON \`part\` (\`message_id\`,\`id\`);
CREATE INDEX IF NOT EXISTS \`part_session_idx\` ON \`part\` (\`session_id\`);
CREATE INDEX IF NOT EXISTS \`session_parent_idx\` ON \`session\` (\`parent_id\`);
`;

type Rec = Record<string, unknown>;

export interface ExportDoc {
  info: Rec & { id: string; parentID?: string | null; directory?: string; title?: string; time?: Rec };
  messages: Array<{ info: Rec; parts: Rec[] }>;
}

/** Creates (or extends) an opencode-shaped database at `path` holding `docs`. WAL, like opencode. */
export function writeOpencodeDb(path: string, docs: Iterable<ExportDoc>): void {
  const db = new Database(path);
  try {
    db.pragma("journal_mode = WAL");
    db.exec(OPENCODE_SCHEMA);
    // A secret the calibrator must never read.
    db.prepare(
      "INSERT OR REPLACE INTO credential (id, data) VALUES ('cred_1', '{\"token\":\"do-not-read\"}')",
    ).run();
    const insSession = db.prepare(
      "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated) VALUES (?, 'prj_bench', ?, ?, ?, ?, '1.18.33', ?, ?)",
    );
    const insMessage = db.prepare(
      "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)",
    );
    const insPart = db.prepare(
      "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)",
    );
    const insertAll = db.transaction((batch: ExportDoc[]) => {
      for (const doc of batch) {
        const time = (doc.info.time ?? {}) as { created?: number; updated?: number };
        const created = time.created ?? 0;
        insSession.run(
          doc.info.id,
          doc.info.parentID ?? null,
          doc.info.id.slice(-8),
          doc.info.directory ?? "/PROJECT_DIR",
          doc.info.title ?? doc.info.id,
          created,
          time.updated ?? created,
        );
        for (const m of doc.messages) {
          const { id, sessionID: _s, ...info } = m.info as Rec & { id: string; sessionID?: string };
          const mt = ((info.time ?? {}) as { created?: number; completed?: number }).created ?? created;
          insMessage.run(id, doc.info.id, mt, mt, JSON.stringify(info));
          for (const p of m.parts) {
            const { id: pid, messageID: _m, sessionID: _ps, ...data } = p as Rec & { id: string };
            insPart.run(pid, id, doc.info.id, mt, mt, JSON.stringify(data));
          }
        }
      }
    });
    let batch: ExportDoc[] = [];
    for (const doc of docs) {
      batch.push(doc);
      if (batch.length >= 50) {
        insertAll(batch);
        batch = [];
      }
    }
    if (batch.length) insertAll(batch);
  } finally {
    db.close();
  }
}

/** A small deterministic PRNG, so synthetic corpora are the same on every run. */
export function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

const hex = (n: number, w: number) => n.toString(16).padStart(w, "0");

export interface SyntheticOptions {
  /** Every `loopEvery`-th session is a read loop. */
  loopEvery?: number;
  /**
   * Each assistant message holds the parts opencode writes around its tool call
   * (step-start, the tool, step-finish with the step's tokens, a patch part
   * after an edit) instead of the tool part alone.
   */
  steps?: boolean;
}

/** The user message that opens each synthetic session. */
function taskMessage(index: number, id: string, start: number): ExportDoc["messages"][number] {
  return {
    info: {
      id: `msg_${hex(index, 8)}${hex(0, 6)}`,
      sessionID: id,
      role: "user",
      agent: "build",
      time: { created: start },
    },
    parts: [
      {
        id: `prt_${hex(index, 8)}${hex(0, 6)}`,
        sessionID: id,
        messageID: `msg_${hex(index, 8)}${hex(0, 6)}`,
        type: "text",
        text: "do the task",
      },
    ],
  };
}

/**
 * One call's tool part (its state without the time): a looping session re-reads
 * one file; a healthy one reads (half), edits with a diff (a quarter) or runs
 * tests, failing one run in five. Draws from `rand` in a fixed order.
 */
function syntheticTool(
  rand: () => number,
  o: { c: number; dir: string; file: string; looping: boolean },
): Rec {
  const { c, dir, file, looping } = o;
  const r = rand();
  if (looping) {
    return {
      tool: "read",
      state: { status: "completed", input: { filePath: `${dir}/src/stuck.ts` }, metadata: {} },
    };
  } else if (r < 0.5) {
    return {
      tool: "read",
      state: {
        status: "completed",
        input: { filePath: file, offset: Math.floor(rand() * 20) * 100 + 1, limit: 100 },
        output: "x".repeat(400),
        metadata: { truncated: false },
      },
    };
  } else if (r < 0.75) {
    const a = `v${c}`;
    return {
      tool: "edit",
      state: {
        status: "completed",
        input: { filePath: file, oldString: `old ${a}`, newString: `new ${a}` },
        output: "Edit applied successfully.",
        metadata: { diff: `--- ${file}\n+++ ${file}\n@@ -1 +1 @@\n-old ${a}\n+new ${a}\n` },
      },
    };
  } else {
    const exit = rand() < 0.2 ? 1 : 0;
    return {
      tool: "bash",
      state: {
        status: "completed",
        input: { command: `npx vitest run ${file.replace(/\.ts$/, ".test.ts")}`, description: "Run tests" },
        output: exit ? "1 failing" : "all passing",
        metadata: { output: exit ? "1 failing" : "all passing", exit, truncated: false },
      },
    };
  }
}

/**
 * One synthetic session of `calls` tool calls, one assistant message per call,
 * in opencode's stored shape. Healthy sessions read, edit with a diff and run
 * tests; looping ones (every `loopEvery`-th session) re-read one file.
 */
export function syntheticSession(index: number, calls: number, opts: SyntheticOptions = {}): ExportDoc {
  const rand = prng(index + 1);
  const id = `ses_${hex(index, 8)}bench`;
  const dir = "/PROJECT_DIR";
  const start = 1_800_000_000_000 + index * 997; // sessions overlap in time, like concurrent agents
  const looping = opts.loopEvery ? index % opts.loopEvery === 0 : false;
  const messages: ExportDoc["messages"] = [taskMessage(index, id, start)];
  for (let c = 1; c <= calls; c++) {
    const t = start + c * 2000;
    const mid = `msg_${hex(index, 8)}${hex(c, 6)}`;
    const file = `${dir}/src/mod${Math.floor(rand() * 200)}.ts`;
    const part = syntheticTool(rand, { c, dir, file, looping });
    (part.state as Rec).time = { start: t - 500, end: t };
    const tokens = { input: 2000 + c * 10, output: 40, reasoning: 0, cache: { read: 1500, write: 0 } };
    const toolPart: Rec = {
      id: `prt_${hex(index, 8)}${hex(c, 6)}`,
      sessionID: id,
      messageID: mid,
      type: "tool",
      callID: `call_${c}`,
      ...part,
    };
    messages.push({
      info: {
        id: mid,
        sessionID: id,
        role: "assistant",
        agent: "build",
        mode: "build",
        providerID: "fake",
        modelID: "loop",
        cost: 0.001,
        tokens,
        time: { created: t - 1500, completed: t },
        finish: "tool-calls",
      },
      parts: opts.steps ? stepParts(toolPart, tokens) : [toolPart],
    });
  }
  return {
    info: {
      id,
      directory: dir,
      title: `bench ${index}`,
      time: { created: start, updated: start + calls * 2000 },
    },
    messages,
  };
}

/** The parts opencode writes for one step that made one tool call, keys in its order (see test/fixtures/recorded). */
function stepParts(tool: Rec, tokens: Rec): Rec[] {
  const ref = { sessionID: tool.sessionID, messageID: tool.messageID };
  const snapshot = "6abbc56a7cf9801267edefa71ea4ccb6edbc466a";
  const out: Rec[] = [
    { ...ref, id: `${tool.id}0`, snapshot, type: "step-start" },
    { ...tool, id: `${tool.id}1` },
    { ...ref, id: `${tool.id}2`, reason: "tool-calls", snapshot, type: "step-finish", tokens, cost: 0.001 },
  ];
  if (tool.tool === "edit") {
    const filePath = ((tool.state as Rec).input as Rec).filePath;
    out.push({ ...ref, id: `${tool.id}3`, type: "patch", hash: snapshot, files: [filePath] });
  }
  return out;
}

/** `sessions` synthetic sessions of `callsPerSession` calls each. */
export function* syntheticSessions(
  sessions: number,
  callsPerSession: number,
  opts: SyntheticOptions = {},
): Generator<ExportDoc> {
  for (let i = 0; i < sessions; i++) yield syntheticSession(i, callsPerSession, opts);
}
