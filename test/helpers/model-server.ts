// A scripted OpenAI-compatible chat server for driving the real opencode binary
// offline. Every request is recorded; the test's script decides each answer.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { readBody } from "./hook.ts";

export interface ModelRequest {
  /** 0-based arrival order over all requests. */
  index: number;
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  // biome-ignore lint/suspicious/noExplicitAny: raw JSON from opencode, shape varies per request
  body: any;
  /** From x-session-id (opencode sends it on every call, title calls included). */
  sessionId: string | undefined;
  /** From x-parent-session-id (sub-agent sessions only). */
  parentSessionId: string | undefined;
  /** opencode's title-generation call (no tools, "title generator" system prompt). */
  isTitle: boolean;
  /** opencode's compaction summary call (no tools, summary instructions). */
  isCompaction: boolean;
  /** Assistant messages already in body.messages: 0 on the first step after a new session's first prompt. */
  step: number;
  /** Tool messages in body.messages, in order. */
  toolResults: Array<{ toolCallId: string; content: string }>;
  /** Text of the last user message (handy for scripts keyed on the prompt). */
  lastUserText: string;
  /** Names of the tools offered to the model. */
  toolNames: string[];
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens?: number;
}

export type ModelReply =
  | { kind: "tools"; calls: Array<{ name: string; args: Record<string, unknown> }>; usage?: Usage }
  | { kind: "text"; text: string; usage?: Usage }
  | { kind: "http"; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: "hang" };

export type Script = (req: ModelRequest) => ModelReply | Promise<ModelReply>;

export interface ModelServer {
  /** Base URL ending in /v1, for provider.options.baseURL. */
  url: string;
  port: number;
  requests: ModelRequest[];
  /** Script exceptions; the request got a 400 so opencode stops instead of retrying. */
  errors: Error[];
  close(): Promise<void>;
}

export interface ModelServerOptions {
  script: Script;
  usage?: Usage;
  model?: string;
  /** Pass title requests to the script instead of auto-answering them. */
  scriptTitles?: boolean;
  /** Pass compaction requests to the script instead of auto-answering them. */
  scriptCompaction?: boolean;
}

const DEFAULT_USAGE: Usage = { prompt_tokens: 100, completion_tokens: 10 };

export async function startModelServer(opts: ModelServerOptions): Promise<ModelServer> {
  const requests: ModelRequest[] = [];
  const errors: Error[] = [];
  const sockets = new Set<Socket>();
  const ctx = { opts, requests, errors, model: opts.model ?? "loop", callSeq: 0 };
  const server = createServer((req, res) => {
    handle(ctx, req, res).catch((err) => {
      errors.push(err as Error);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  // "hang" replies keep sockets open forever: track them so close() can cut them.
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  let closed: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    errors,
    close: () => {
      closed ??= new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      });
      return closed;
    },
  };
}

interface Ctx {
  opts: ModelServerOptions;
  requests: ModelRequest[];
  errors: Error[];
  model: string;
  callSeq: number;
}

async function handle(ctx: Ctx, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const raw = await readBody(req);
  const path = (req.url ?? "/").split("?")[0] ?? "/";
  if (req.method === "GET" && path.endsWith("/models")) {
    return sendJson(res, 200, {
      object: "list",
      data: [{ id: ctx.model, object: "model", owned_by: "test" }],
    });
  }
  if (req.method !== "POST" || !path.endsWith("/chat/completions")) {
    return sendJson(res, 404, { error: { message: `no route ${req.method} ${path}`, type: "not_found" } });
  }
  const body = parseJson(raw);
  const mreq = describeRequest(ctx.requests.length, path, req, body);
  ctx.requests.push(mreq);
  const reply = await chooseReply(ctx, mreq);
  await sendReply(ctx, res, body, reply);
}

async function chooseReply(ctx: Ctx, mreq: ModelRequest): Promise<ModelReply> {
  if (mreq.isTitle && !ctx.opts.scriptTitles) return { kind: "text", text: "Scripted test session" };
  if (mreq.isCompaction && !ctx.opts.scriptCompaction) {
    return { kind: "text", text: "Summary: the scripted session did some work." };
  }
  try {
    return await ctx.opts.script(mreq);
  } catch (err) {
    // A 400 without retry words makes opencode stop at once, so a broken script fails fast.
    ctx.errors.push(err as Error);
    const message = `script error: ${(err as Error).message}`;
    return { kind: "http", status: 400, body: { error: { message, type: "invalid_request_error" } } };
  }
}

function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return {};
  }
}

// biome-ignore lint/suspicious/noExplicitAny: request body is untyped JSON
type Msg = { role?: string; content?: any; tool_call_id?: string };

export function describeRequest(
  index: number,
  path: string,
  req: IncomingMessage,
  body: unknown,
): ModelRequest {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) {
    if (v !== undefined) headers[k.toLowerCase()] = Array.isArray(v) ? v.join(", ") : v;
  }
  // biome-ignore lint/suspicious/noExplicitAny: untyped JSON
  const b = (body ?? {}) as any;
  const messages: Msg[] = Array.isArray(b.messages) ? b.messages : [];
  const toolNames: string[] = Array.isArray(b.tools)
    ? b.tools.map((t: { function?: { name?: string } }) => t.function?.name ?? "")
    : [];
  const system = messages
    .filter((m) => m.role === "system")
    .map((m) => contentText(m.content))
    .join("\n");
  const users = messages.filter((m) => m.role === "user");
  const lastUserText = contentText(users[users.length - 1]?.content);
  return {
    index,
    path,
    headers,
    body,
    sessionId: headers["x-session-id"],
    parentSessionId: headers["x-parent-session-id"],
    isTitle: toolNames.length === 0 && isTitleSystem(system),
    isCompaction: toolNames.length === 0 && !isTitleSystem(system) && isCompactionText(system, lastUserText),
    step: messages.filter((m) => m.role === "assistant").length,
    toolResults: messages
      .filter((m) => m.role === "tool")
      .map((m) => ({ toolCallId: m.tool_call_id ?? "", content: contentText(m.content) })),
    lastUserText,
    toolNames,
  };
}

// opencode's title agent prompt starts "You are a title generator".
function isTitleSystem(system: string): boolean {
  return /you are a title generator/i.test(system);
}

// The compaction agent's system prompt starts "You are a context summarization
// agent" and its user message wraps the history in "Here is the conversation so far".
function isCompactionText(system: string, lastUser: string): boolean {
  return /summarization agent/i.test(system) || /^Here is the conversation so far/.test(lastUser);
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((c) => (typeof c === "string" ? c : typeof c?.text === "string" ? c.text : ""))
      .join("");
  }
  return "";
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(text);
}

async function sendReply(ctx: Ctx, res: ServerResponse, body: unknown, reply: ModelReply): Promise<void> {
  if (reply.kind === "hang") return; // leave the socket open; close() destroys it
  if (reply.kind === "http") return sendJson(res, reply.status, reply.body, reply.headers);
  // biome-ignore lint/suspicious/noExplicitAny: untyped JSON
  const b = (body ?? {}) as any;
  const usage = reply.usage ?? ctx.opts.usage ?? DEFAULT_USAGE;
  const calls = reply.kind === "tools" ? reply.calls.map((c) => ({ ...c, id: `call_${++ctx.callSeq}` })) : [];
  if (b.stream === true)
    return streamReply(ctx, res, reply, calls, usage, b.stream_options?.include_usage === true);
  return sendJson(res, 200, completionJson(ctx, reply, calls, usage));
}

type IdCall = { id: string; name: string; args: Record<string, unknown> };

function usageJson(u: Usage): Record<string, unknown> {
  return {
    prompt_tokens: u.prompt_tokens,
    completion_tokens: u.completion_tokens,
    total_tokens: u.prompt_tokens + u.completion_tokens,
    ...(u.cached_tokens !== undefined ? { prompt_tokens_details: { cached_tokens: u.cached_tokens } } : {}),
  };
}

function completionJson(ctx: Ctx, reply: ModelReply, calls: IdCall[], usage: Usage): unknown {
  const text = reply.kind === "text" ? reply.text : null;
  const toolCalls = calls.map((c) => ({
    id: c.id,
    type: "function",
    function: { name: c.name, arguments: JSON.stringify(c.args) },
  }));
  return {
    id: `chatcmpl-${ctx.requests.length}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: ctx.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: text, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
        finish_reason: calls.length ? "tool_calls" : "stop",
      },
    ],
    usage: usageJson(usage),
  };
}

function streamReply(
  ctx: Ctx,
  res: ServerResponse,
  reply: ModelReply,
  calls: IdCall[],
  usage: Usage,
  includeUsage: boolean,
): void {
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  const id = `chatcmpl-${ctx.requests.length}`;
  const created = Math.floor(Date.now() / 1000);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    res.write(
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: ctx.model, choices, ...extra })}\n\n`,
    );
  const delta = (d: unknown, finish: string | null = null) =>
    chunk([{ index: 0, delta: d, finish_reason: finish }]);
  delta({ role: "assistant", content: "" });
  if (reply.kind === "text") {
    for (const piece of splitText(reply.text)) delta({ content: piece });
  }
  calls.forEach((c, i) => {
    // Name first, then the arguments in two pieces, as real providers stream them.
    const args = JSON.stringify(c.args);
    const half = Math.floor(args.length / 2);
    delta({
      tool_calls: [{ index: i, id: c.id, type: "function", function: { name: c.name, arguments: "" } }],
    });
    delta({ tool_calls: [{ index: i, function: { arguments: args.slice(0, half) } }] });
    delta({ tool_calls: [{ index: i, function: { arguments: args.slice(half) } }] });
  });
  delta({}, calls.length ? "tool_calls" : "stop");
  if (includeUsage) chunk([], { usage: usageJson(usage) });
  res.end("data: [DONE]\n\n");
}

function splitText(text: string): string[] {
  if (text.length < 2) return [text];
  const half = Math.floor(text.length / 2);
  return [text.slice(0, half), text.slice(half)];
}

/**
 * Route requests to per-session scripts, so one model server can serve many
 * tests. A sub-agent's requests go to its parent's script unless the child has
 * its own route; anything unrouted goes to `fallback` (default: a text reply).
 */
export function scriptRouter(fallback: Script = () => ({ kind: "text", text: "ok" })) {
  const routes = new Map<string, Script>();
  const script: Script = (req) => {
    const own = req.sessionId ? routes.get(req.sessionId) : undefined;
    const parent = req.parentSessionId ? routes.get(req.parentSessionId) : undefined;
    return (own ?? parent ?? fallback)(req);
  };
  return {
    script,
    on(sessionId: string, s: Script): void {
      routes.set(sessionId, s);
    },
    off(sessionId: string): void {
      routes.delete(sessionId);
    },
  };
}

/** Answer step n of a turn chain with steps[n]; the last entry repeats. */
export function steps(...replies: ModelReply[]): Script {
  return (req) => {
    const r = replies[Math.min(req.step, replies.length - 1)];
    if (!r) throw new Error("steps() needs at least one reply");
    return r;
  };
}
