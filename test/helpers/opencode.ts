// Start the real opencode binary (serve or run) in an isolated temp HOME and
// project dir, wired to a scripted model server. Every process started here
// runs in its own process group and is killed on stop() or when this process exits.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./free-port.ts";

/** The checkout, and the pinned opencode binary in its node_modules. */
export const REPO = fileURLToPath(new URL("../..", import.meta.url));
export const OPENCODE_BIN = join(REPO, "node_modules", ".bin", "opencode");
const PLUGIN_PKG = join(REPO, "node_modules", "@opencode-ai", "plugin");
export const PROVIDER_ID = "fake";
export const MODEL_ID = "loop";

export interface OpencodeOptions {
  /** The scripted server's /v1 base. */
  modelUrl: string;
  /** The provider's apiKey in opencode.json (the gate's client key, or a {file:...}/{env:...} reference). Default "x". */
  apiKey?: string;
  /** Runs once the workspace (home, project, opencode.json) exists and before opencode starts. */
  beforeStart?: (ws: Workspace) => void | Promise<void>;
  /** Absolute paths of plugin .js/.ts files, copied into <project>/.opencode/plugins/. */
  plugins?: string[];
  /** Deep-merged into the generated opencode.json (objects merge, everything else replaces). */
  opencodeConfig?: Record<string, unknown>;
  env?: Record<string, string>;
  /** Relative path -> content, written into the project dir before start. */
  projectFiles?: Record<string, string>;
  /** git init + initial commit in the project dir. */
  git?: boolean;
  /** Passed as --log-level with --print-logs; logs then land in output(). Default WARN. */
  logLevel?: "DEBUG" | "INFO" | "WARN" | "ERROR";
  /** Pre-seed @opencode-ai/plugin in the config dirs (default true; false only to measure the npm wait). */
  seedPluginDeps?: boolean;
}

export interface Workspace {
  root: string;
  home: string;
  projectDir: string;
  dbPath: string;
  env: Record<string, string>;
}

// ---------------------------------------------------------------------------
// Process and temp-dir bookkeeping, so a crashed test leaves nothing behind.

const liveGroups = new Set<number>();
const tempRoots = new Set<string>();
const keepTmp = process.env.STALLGUARD_KEEP_TMP === "1";

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

function reapAll(): void {
  for (const pid of liveGroups) killGroup(pid, "SIGKILL");
  liveGroups.clear();
  if (!keepTmp) for (const dir of tempRoots) rmSync(dir, { recursive: true, force: true });
  tempRoots.clear();
}

// Children run in their own process group, so they do not die with us: kill
// them on exit and on the usual termination signals (then re-raise the signal).
let reaperInstalled = false;
function installReaper(): void {
  if (reaperInstalled) return;
  reaperInstalled = true;
  process.once("exit", reapAll);
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(sig, () => {
      reapAll();
      process.kill(process.pid, sig);
    });
  }
}

function removeRoot(root: string): void {
  tempRoots.delete(root);
  if (keepTmp) {
    console.log(`[opencode-harness] kept temp dir ${root}`);
    return;
  }
  rmSync(root, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------
// Workspace preparation.

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function deepMerge(
  base: Record<string, unknown>,
  extra: Record<string, unknown>,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(extra)) {
    const cur = out[k];
    out[k] = isPlainObject(cur) && isPlainObject(v) ? deepMerge(cur, v) : v;
  }
  return out;
}

export function baseConfig(modelUrl: string, apiKey = "x"): Record<string, unknown> {
  return {
    $schema: "https://opencode.ai/config.json",
    provider: {
      [PROVIDER_ID]: {
        npm: "@ai-sdk/openai-compatible",
        name: "Fake",
        options: { baseURL: modelUrl, apiKey },
        models: { [MODEL_ID]: { name: MODEL_ID, limit: { context: 200000, output: 4096 } } },
      },
    },
    model: `${PROVIDER_ID}/${MODEL_ID}`,
    small_model: `${PROVIDER_ID}/${MODEL_ID}`,
    // Nothing may stop headless for a question: doom_loop and external_directory
    // default to "ask", and read asks for *.env files.
    permission: {
      edit: "allow",
      bash: "allow",
      read: "allow",
      webfetch: "allow",
      doom_loop: "allow",
      external_directory: "allow",
    },
    autoupdate: false,
    share: "disabled",
  };
}

function pluginVersion(): string {
  return JSON.parse(readFileSync(join(PLUGIN_PKG, "package.json"), "utf8")).version as string;
}

/**
 * opencode runs `npm install @opencode-ai/plugin@<ver>` in every config dir and,
 * when any plugin is present, waits for it. The install is skipped when the dir
 * has node_modules/ and package-lock.json's packages[""] lists every dependency
 * of package.json. A symlink to the repo's copy lets plugins import the package.
 */
export function seedConfigDir(dir: string): void {
  const deps = { "@opencode-ai/plugin": pluginVersion() };
  mkdirSync(join(dir, "node_modules", "@opencode-ai"), { recursive: true });
  writeFileSync(join(dir, "package.json"), `${JSON.stringify({ dependencies: deps }, null, 2)}\n`);
  const lock = {
    name: basename(dir),
    lockfileVersion: 3,
    requires: true,
    packages: { "": { dependencies: deps } },
  };
  writeFileSync(join(dir, "package-lock.json"), `${JSON.stringify(lock, null, 2)}\n`);
  // Same ignore list opencode writes itself, so a git-initialised project does not commit the seed.
  writeFileSync(
    join(dir, ".gitignore"),
    "node_modules\npackage.json\npackage-lock.json\nbun.lock\n.gitignore\n",
  );
  const link = join(dir, "node_modules", "@opencode-ai", "plugin");
  if (!existsSync(link)) symlinkSync(PLUGIN_PKG, link, "dir");
}

function isolatedEnv(home: string, extra: Record<string, string> | undefined): Record<string, string> {
  const pass = ["PATH", "LANG", "LC_ALL", "TZ", "SHELL"];
  const env: Record<string, string> = {};
  for (const k of pass) {
    const v = process.env[k];
    if (v !== undefined) env[k] = v;
  }
  return {
    ...env,
    HOME: home,
    USERPROFILE: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_DATA_HOME: join(home, ".local", "share"),
    XDG_CACHE_HOME: join(home, ".cache"),
    XDG_STATE_HOME: join(home, ".local", "state"),
    OPENCODE_DISABLE_MODELS_FETCH: "1",
    OPENCODE_DISABLE_AUTOUPDATE: "1",
    OPENCODE_DISABLE_SHARE: "1",
    OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
    OPENCODE_DISABLE_CLAUDE_CODE: "1",
    OPENCODE_DISABLE_EXTERNAL_SKILLS: "1",
    // If an npm install is ever attempted anyway, fail fast instead of hitting the network.
    npm_config_offline: "true",
    npm_config_registry: "http://127.0.0.1:9/",
    ...extra,
  };
}

function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [rel, content] of Object.entries(files)) {
    const file = join(dir, rel);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
}

function gitInit(dir: string, env: Record<string, string>): void {
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=test", "-c", "user.email=test@example.invalid", ...args], {
      cwd: dir,
      env,
      stdio: "ignore",
    });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("commit", "-q", "--allow-empty", "-m", "initial");
}

export function prepareWorkspace(opts: OpencodeOptions): Workspace {
  installReaper();
  const root = mkdtempSync(join(tmpdir(), "stallguard-oc-"));
  tempRoots.add(root);
  // home and project are siblings: a project inside home would make ~/.opencode a project dir too.
  const home = join(root, "home");
  const projectDir = join(root, "project");
  const env = isolatedEnv(home, opts.env);
  mkdirSync(projectDir, { recursive: true });
  if (opts.seedPluginDeps !== false) {
    seedConfigDir(join(home, ".config", "opencode"));
    seedConfigDir(join(projectDir, ".opencode"));
    if (opts.env?.OPENCODE_CONFIG_DIR) seedConfigDir(opts.env.OPENCODE_CONFIG_DIR);
  }
  const config = deepMerge(baseConfig(opts.modelUrl, opts.apiKey), opts.opencodeConfig ?? {});
  writeFileSync(join(projectDir, "opencode.json"), `${JSON.stringify(config, null, 2)}\n`);
  for (const p of opts.plugins ?? []) {
    writeFiles(join(projectDir, ".opencode", "plugins"), { [basename(p)]: readFileSync(p, "utf8") });
  }
  writeFiles(projectDir, opts.projectFiles ?? {});
  if (opts.git) gitInit(projectDir, env);
  const dbPath = join(home, ".local", "share", "opencode", "opencode.db");
  return { root, home, projectDir, dbPath, env };
}

// ---------------------------------------------------------------------------
// Child processes.

interface Child {
  proc: ChildProcess;
  exited: Promise<number | null>;
  /** stdout and stderr interleaved (tail). */
  output(): string;
  stdout(): string;
  stderr(): string;
}

const MAX_LOG = 1024 * 1024;

function spawnGroup(args: string[], ws: Workspace): Child {
  // detached = own process group, so one kill reaches opencode and its tool subprocesses.
  const proc = spawn(OPENCODE_BIN, args, {
    cwd: ws.projectDir,
    env: ws.env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  if (proc.pid) liveGroups.add(proc.pid);
  const logs = { all: "", out: "", err: "" };
  const tail = (s: string) => (s.length > MAX_LOG ? s.slice(-MAX_LOG) : s);
  proc.stdout?.on("data", (b: Buffer) => {
    logs.out = tail(logs.out + b.toString("utf8"));
    logs.all = tail(logs.all + b.toString("utf8"));
  });
  proc.stderr?.on("data", (b: Buffer) => {
    logs.err = tail(logs.err + b.toString("utf8"));
    logs.all = tail(logs.all + b.toString("utf8"));
  });
  const exited = new Promise<number | null>((resolve) => {
    proc.once("exit", (code) => {
      if (proc.pid) liveGroups.delete(proc.pid);
      resolve(code);
    });
    proc.once("error", () => resolve(null));
  });
  return { proc, exited, output: () => logs.all, stdout: () => logs.out, stderr: () => logs.err };
}

async function stopGroup(child: Child): Promise<void> {
  const pid = child.proc.pid;
  if (!pid) return;
  killGroup(pid, "SIGTERM");
  const timer = setTimeout(() => killGroup(pid, "SIGKILL"), 3000);
  await child.exited;
  clearTimeout(timer);
  // Tool subprocesses (bash) share the group; make sure none outlive the server.
  killGroup(pid, "SIGKILL");
  liveGroups.delete(pid);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

// ---------------------------------------------------------------------------
// opencode serve.

export interface EventStream extends AsyncIterable<OpencodeEvent> {
  /** Every event received so far, in order. */
  events: OpencodeEvent[];
  /** Resolves once the SSE response has started (subscribe before acting). */
  ready: Promise<void>;
  waitFor(pred: (e: OpencodeEvent) => boolean, timeoutMs?: number): Promise<OpencodeEvent>;
  stop(): void;
}

// biome-ignore lint/suspicious/noExplicitAny: opencode's event payloads vary by type
export type OpencodeEvent = { type: string; properties: any; [k: string]: unknown };

export interface OpencodeServer extends Workspace {
  url: string;
  port: number;
  /** ms from spawn until the project instance answered. */
  startupMs: number;
  // biome-ignore lint/suspicious/noExplicitAny: raw API JSON
  api(method: string, path: string, body?: unknown, timeoutMs?: number): Promise<any>;
  createSession(opts?: { title?: string; parentID?: string }): Promise<{ id: string }>;
  prompt(sessionId: string, text: string, opts?: PromptOptions): Promise<unknown>;
  promptAsync(sessionId: string, text: string, opts?: { agent?: string; synthetic?: boolean }): Promise<void>;
  // biome-ignore lint/suspicious/noExplicitAny: raw API JSON
  messages(sessionId: string): Promise<Array<{ info: any; parts: any[] }>>;
  // biome-ignore lint/suspicious/noExplicitAny: raw API JSON
  sessions(): Promise<any[]>;
  waitIdle(sessionId: string, timeoutMs?: number): Promise<void>;
  events(): EventStream;
  /** stdout+stderr of the server so far (tail). */
  output(): string;
  stop(): Promise<void>;
}

export interface PromptOptions {
  agent?: string;
  timeoutMs?: number;
  synthetic?: boolean;
}

export async function startOpencode(opts: OpencodeOptions): Promise<OpencodeServer> {
  const t0 = Date.now();
  const ws = prepareWorkspace(opts);
  await opts.beforeStart?.(ws);
  let lastErr: Error | undefined;
  // The port can be taken between freePort() and bind: retry with a new one.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const args = ["serve", "--port", String(port), "--hostname", "127.0.0.1", "--print-logs"];
    const child = spawnGroup([...args, "--log-level", opts.logLevel ?? "WARN"], ws);
    try {
      const url = await waitListening(child, 60_000);
      await waitReady(url, child, 60_000);
      return makeServer(ws, child, url, Date.now() - t0);
    } catch (err) {
      await stopGroup(child);
      lastErr = new Error(`${(err as Error).message}\n${child.output()}`);
    }
  }
  removeRoot(ws.root);
  throw new Error(`opencode serve did not start: ${lastErr?.message}`);
}

// opencode prints the URL it bound once it listens ("--port 0" would mean its fixed default 4096).
async function waitListening(child: Child, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  child.exited.then(() => {
    exited = true;
  });
  while (Date.now() < deadline) {
    const m = /listening on (http:\/\/[\w.:[\]]+)/.exec(child.output());
    if (m?.[1]) return m[1];
    if (exited) throw new Error("process exited");
    await sleep(25);
  }
  throw new Error("no 'listening on' line");
}

// The first request for a directory boots the project instance (config, plugins)
// and can hang meanwhile, so poll with a short client timeout.
async function waitReady(url: string, child: Child, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.proc.exitCode !== null) throw new Error(`process exited with ${child.proc.exitCode}`);
    try {
      const res = await fetch(`${url}/config`, { signal: AbortSignal.timeout(2000) });
      if (res.ok) return;
    } catch {
      // not ready yet
    }
    await sleep(50);
  }
  throw new Error("not ready in time");
}

function makeServer(ws: Workspace, child: Child, url: string, startupMs: number): OpencodeServer {
  const streams = new Set<EventStream>();
  const baseline = new Map<string, number>();
  let stopped = false;
  const api = (method: string, path: string, body?: unknown, timeoutMs = 30_000) =>
    apiCall(url, method, path, body, timeoutMs);
  const promptBody = (text: string, o: { agent?: string; synthetic?: boolean } = {}) => ({
    parts: [{ type: "text", text, ...(o.synthetic ? { synthetic: true } : {}) }],
    model: { providerID: PROVIDER_ID, modelID: MODEL_ID },
    ...(o.agent ? { agent: o.agent } : {}),
  });
  return {
    ...ws,
    url,
    port: Number(new URL(url).port),
    startupMs,
    api,
    createSession: (o = {}) => api("POST", "/session", o),
    prompt: (id, text, o = {}) =>
      api("POST", `/session/${id}/message`, promptBody(text, o), o.timeoutMs ?? 120_000),
    promptAsync: async (id, text, o = {}) => {
      // Remember how many messages existed so waitIdle cannot mistake the previous turn for this one.
      baseline.set(id, (await api("GET", `/session/${id}/message`)).length);
      await api("POST", `/session/${id}/prompt_async`, promptBody(text, o));
    },
    messages: (id) => api("GET", `/session/${id}/message`),
    sessions: () => api("GET", "/session"),
    waitIdle: (id, timeoutMs = 120_000) => waitIdle(api, id, timeoutMs, baseline.get(id) ?? 0),
    events: () => {
      const s = subscribe(url, () => streams.delete(s));
      streams.add(s);
      return s;
    },
    output: child.output,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      for (const s of streams) s.stop();
      await stopGroup(child);
      removeRoot(ws.root);
    },
  };
}

async function apiCall(url: string, method: string, path: string, body: unknown, timeoutMs: number) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} -> ${res.status}: ${text.slice(0, 500)}`);
  return text ? JSON.parse(text) : undefined;
}

// Idle = absent from /session/status and the newest message (beyond `after`
// messages) is a finished assistant message. The second check covers the gap
// right after prompt_async, before the loop has marked the session busy.
async function waitIdle(
  api: OpencodeServer["api"],
  id: string,
  timeoutMs: number,
  after: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const status = await api("GET", "/session/status");
    if (!status?.[id] || status[id].type === "idle") {
      const msgs: Array<{ info: { role: string; time?: { completed?: number }; error?: unknown } }> =
        await api("GET", `/session/${id}/message`);
      const last = msgs.length > after ? msgs[msgs.length - 1]?.info : undefined;
      if (last && last.role === "assistant" && (last.time?.completed || last.error)) return;
    }
    await sleep(150);
  }
  throw new Error(`session ${id} not idle after ${timeoutMs} ms`);
}

function subscribe(url: string, onStop: () => void): EventStream {
  const events: OpencodeEvent[] = [];
  const waiters = new Set<() => void>();
  const nextEvent = new Set<() => void>();
  const ctrl = new AbortController();
  let markReady: () => void = () => {};
  let failReady: (err: unknown) => void = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    markReady = resolve;
    failReady = reject;
  });
  ready.catch(() => {}); // only awaiting callers should see the failure
  const push = (e: OpencodeEvent) => {
    events.push(e);
    for (const w of waiters) w();
    for (const r of nextEvent) r();
    nextEvent.clear();
  };
  // A failure before the stream opened rejects `ready`; later ones (stop()) are expected.
  readSse(`${url}/event`, ctrl.signal, markReady, push).catch(failReady);
  const waitFor = (pred: (e: OpencodeEvent) => boolean, timeoutMs = 30_000) =>
    new Promise<OpencodeEvent>((resolve, reject) => {
      let seen = 0;
      const check = () => {
        for (; seen < events.length; seen++) {
          const e = events[seen] as OpencodeEvent;
          if (pred(e)) return done(() => resolve(e));
        }
      };
      const timer = setTimeout(() => done(() => reject(new Error("event not seen in time"))), timeoutMs);
      const done = (fn: () => void) => {
        clearTimeout(timer);
        waiters.delete(check);
        fn();
      };
      waiters.add(check);
      check();
    });
  return {
    events,
    ready,
    waitFor,
    stop: () => {
      ctrl.abort();
      for (const r of nextEvent) r();
      onStop();
    },
    async *[Symbol.asyncIterator]() {
      for (let i = 0; !ctrl.signal.aborted; i++) {
        if (i >= events.length) await new Promise<void>((r) => nextEvent.add(r));
        const e = events[i];
        if (e) yield e;
      }
    },
  };
}

async function readSse(
  url: string,
  signal: AbortSignal,
  onOpen: () => void,
  push: (e: OpencodeEvent) => void,
): Promise<void> {
  const res = await fetch(url, { signal, headers: { accept: "text/event-stream" } });
  if (!res.ok || !res.body) throw new Error(`GET /event -> ${res.status}`);
  onOpen();
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true });
    let cut = buf.indexOf("\n\n");
    while (cut >= 0) {
      const data = sseData(buf.slice(0, cut));
      buf = buf.slice(cut + 2);
      if (data) push(JSON.parse(data));
      cut = buf.indexOf("\n\n");
    }
  }
}

function sseData(block: string): string {
  return block
    .split("\n")
    .filter((l) => l.startsWith("data:"))
    .map((l) => l.slice(5).trimStart())
    .join("\n");
}

// ---------------------------------------------------------------------------
// opencode run.

export interface RunResult {
  /** Exit code; null when killed (see timedOut). */
  code: number | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  ms: number;
  home: string;
  projectDir: string;
  dbPath: string;
  /** Remove the temp dirs (also done at process exit unless STALLGUARD_KEEP_TMP=1). */
  cleanup(): void;
}

export async function runOpencode(
  opts: OpencodeOptions & { message: string; args?: string[]; timeoutMs?: number },
): Promise<RunResult> {
  const ws = prepareWorkspace(opts);
  await opts.beforeStart?.(ws);
  const t0 = Date.now();
  const child = spawnGroup(
    ["run", "-m", `${PROVIDER_ID}/${MODEL_ID}`, ...(opts.args ?? []), opts.message],
    ws,
  );
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void stopGroup(child);
  }, opts.timeoutMs ?? 120_000);
  const code = await child.exited;
  clearTimeout(timer);
  await stopGroup(child);
  return {
    code,
    timedOut,
    stdout: child.stdout(),
    stderr: child.stderr(),
    ms: Date.now() - t0,
    home: ws.home,
    projectDir: ws.projectDir,
    dbPath: ws.dbPath,
    cleanup: () => removeRoot(ws.root),
  };
}
