// opencode's hook inputs and events -> the plugin's own typed values. The one
// place the plugin reads opencode's shapes (opencode 1.18.33: the hooks of
// @opencode-ai/plugin and the payloads of its event bus). Pure and total: junk
// of any shape gives null, never a throw, so the hooks (plugin/hooks/) stay
// thin shells and the runtime takes typed values. A tool's arguments and
// answer are carried, not read: the core hashes them and drops them.
//
// chat.headers fires once per LLM request (one agent step, plus the title and
// compaction calls); chat.message once per user turn that arrives through the
// prompt API, including other plugins' injected continuations; opencode's own
// post-compaction continue turn shows up only as a synthetic text part.
import {
  type CompleteToolHook,
  isCompleteHook,
  isInjectedTurn,
  num,
  obj,
  parseToolHook,
  promptTokensOf,
  slugAgent,
  type TextPartLike,
  text,
  toolKind,
  type UsageObservation,
  userTextHash,
} from "../shared/index.ts";
import type { ModelRef } from "./directives.ts";

/** What an LLM request is, from chat.headers' agent: the title call is not an agent step. */
export function requestKind(agent: unknown): "turn" | "compaction" | "title" {
  const a = slugAgent(agent);
  if (a === "title") return "title";
  if (a === "compaction") return "compaction";
  return "turn";
}

/** chat.headers: one LLM request. */
export interface LlmRequest {
  sessionId: string;
  /** The agent as opencode names it; undefined when it says none. */
  agent: string | undefined;
  kind: "turn" | "compaction" | "title";
  /** The model id (capped), reported with a turn. */
  model: string | undefined;
  /** Provider and model, for a recovery's summarize call; null for the title and compaction calls. */
  modelRef: ModelRef | null;
}

export function llmRequestOf(input: unknown): LlmRequest | null {
  const i = obj(input);
  const sessionId = text(i.sessionID);
  if (!sessionId) return null;
  const internal = i.agent === "title" || i.agent === "compaction";
  return {
    sessionId,
    agent: text(i.agent),
    kind: requestKind(i.agent),
    model: text(obj(i.model).id)?.slice(0, 120),
    modelRef: internal ? null : modelFromInput(input),
  };
}

/** The model a chat.headers / chat.params input names: message.model first, then model + provider. */
export function modelFromInput(input: unknown): ModelRef | null {
  const i = obj(input);
  const m = obj(obj(i.message).model);
  const fromMsg = { providerID: text(m.providerID), modelID: text(m.modelID) };
  if (fromMsg.providerID && fromMsg.modelID) return fromMsg as ModelRef;
  const model = obj(i.model);
  const providerID = text(model.providerID) ?? text(obj(obj(i.provider).info).id) ?? text(i.provider);
  const modelID = text(model.id) ?? text(i.model);
  return providerID && modelID ? { providerID, modelID } : null;
}

/** chat.headers' output headers, the object the plugin adds its headers to; null when there is none. */
export function headersOf(output: unknown): Record<string, string> | null {
  const headers = obj(output).headers;
  return typeof headers === "object" && headers !== null ? (headers as Record<string, string>) : null;
}

export interface UserTurn {
  sessionId: string;
  messageId: string | undefined;
  agent: string | undefined;
  injected: boolean;
  textHash: string | null;
}

/** chat.message -> a user turn, injected when nobody typed it. */
export function userTurnOf(input: unknown, output: unknown, markers: readonly string[]): UserTurn | null {
  const i = obj(input);
  const o = obj(output);
  const message = obj(o.message);
  const sessionId = text(i.sessionID) ?? text(message.sessionID);
  if (!sessionId) return null;
  const parts = Array.isArray(o.parts) ? (o.parts as TextPartLike[]) : [];
  return {
    sessionId,
    messageId: text(i.messageID) ?? text(message.id),
    agent: text(i.agent) ?? text(message.agent),
    injected: isInjectedTurn(parts, markers),
    textHash: userTextHash(parts),
  };
}

/** A bash call's command and folder (the work-tree probe reads them). */
export interface BashCommand {
  command: string;
  workdir: string | undefined;
}

function bashOf(tool: string, args: unknown): BashCommand | null {
  if (toolKind(tool) !== "bash") return null;
  const a = obj(args);
  const command = text(a.command);
  return command ? { command, workdir: text(a.workdir) } : null;
}

/** tool.execute.before: a tool about to run. */
export interface ToolStarting {
  sessionId: string;
  callId: string;
  tool: string;
  /** A bash call with a command; null for every other tool. */
  bash: BashCommand | null;
  /** The file a write replaces (hashed before it runs); undefined for other tools. */
  writePath: string | undefined;
}

export function toolStartingOf(input: unknown, output: unknown): ToolStarting | null {
  const i = obj(input);
  const [sessionId, callId, tool] = [text(i.sessionID), text(i.callID), text(i.tool)];
  if (!sessionId || !callId || !tool) return null;
  const args = obj(obj(output).args);
  const path = args.filePath ?? args.file_path ?? args.path;
  const writePath = toolKind(tool) === "write" && typeof path === "string" && path !== "" ? path : undefined;
  return { sessionId, callId, tool, bash: bashOf(tool, args), writePath };
}

/** tool.execute.after: a tool that succeeded (a tool that threw shows only as an error part). */
export interface ToolFinished {
  /** What opencode handed over, read once (it may reuse its objects later). */
  hook: CompleteToolHook;
  bash: BashCommand | null;
  /** A task call's sub-agent session, whose parent is this call's session. */
  childSessionId: string | undefined;
}

export function toolFinishedOf(input: unknown, output: unknown): ToolFinished | null {
  const hook = parseToolHook(input, output);
  if (!isCompleteHook(hook)) return null;
  const child = hook.tool === "task" ? text(obj(hook.metadata).sessionId) : undefined;
  return {
    hook,
    bash: bashOf(hook.tool, hook.args),
    childSessionId: child && child !== hook.sessionId ? child : undefined,
  };
}

/** A finished tool part's ids and status, without touching its contents. */
export interface ToolPartHead {
  partId: string | undefined;
  sessionId: string;
  callId: string;
  status: "completed" | "error";
}

export function toolPartHead(part: unknown): ToolPartHead | null {
  const p = obj(part);
  if (p.type !== "tool") return null;
  const status = obj(p.state).status;
  if (status !== "completed" && status !== "error") return null;
  const sessionId = text(p.sessionID);
  const callId = text(p.callID) ?? text(p.id);
  if (!sessionId || !callId) return null;
  return { partId: text(p.id), sessionId, callId, status };
}

/** message.updated for a finished assistant message -> its billed usage. */
export function usageOf(properties: unknown): UsageObservation | null {
  const info = obj(obj(properties).info);
  if (info.role !== "assistant") return null;
  const completed = num(obj(info.time).completed) ?? 0;
  const sessionId = text(info.sessionID);
  const messageId = text(info.id);
  if (!completed || !sessionId || !messageId) return null;
  const prompt = promptTokensOf(info.tokens);
  return {
    kind: "usage",
    sessionId,
    messageId,
    time: completed,
    costUsd: Math.max(0, num(info.cost) ?? 0),
    promptTokens: prompt,
    contextTokens: prompt,
  };
}

/** session.created / session.updated: who a session is and what opencode shows of it. */
export interface SessionSeen {
  id: string;
  parentId: string | null;
  agent: string | undefined;
  title: string | undefined;
  directory: string | undefined;
  createdAt: number | undefined;
}

export function sessionSeenOf(properties: unknown): SessionSeen | null {
  const info = obj(obj(properties).info);
  const id = text(info.id);
  if (!id) return null;
  return {
    id,
    parentId: text(info.parentID) ?? null,
    agent: text(info.agent),
    title: text(info.title),
    directory: text(info.directory),
    createdAt: num(obj(info.time).created),
  };
}

/** The events the plugin acts on, typed; every other event is ignored (null). */
export type PluginEvent =
  | { type: "tool.part.ended"; head: ToolPartHead; part: unknown }
  | { type: "usage"; usage: UsageObservation }
  | { type: "session.seen"; session: SessionSeen }
  | { type: "session.deleted"; sessionId: string }
  | { type: "session.compacted"; sessionId: string };

export function pluginEventOf(event: unknown): PluginEvent | null {
  const e = obj(event);
  const props = e.properties;
  switch (e.type) {
    case "message.part.updated": {
      const part = obj(props).part;
      const head = toolPartHead(part);
      return head ? { type: "tool.part.ended", head, part } : null;
    }
    case "message.updated": {
      const usage = usageOf(props);
      return usage ? { type: "usage", usage } : null;
    }
    case "session.created":
    case "session.updated": {
      const session = sessionSeenOf(props);
      return session ? { type: "session.seen", session } : null;
    }
    case "session.deleted": {
      const id = sessionSeenOf(props)?.id;
      return id ? { type: "session.deleted", sessionId: id } : null;
    }
    case "session.compacted": {
      const id = sessionIdOf(props);
      return id ? { type: "session.compacted", sessionId: id } : null;
    }
    default:
      return null;
  }
}

/** The sessionID of a hook input or event properties (the compaction hooks, session.compacted). */
export function sessionIdOf(input: unknown): string | undefined {
  return text(obj(input).sessionID);
}

/** experimental.session.compacting's output, where a recovery puts its incident report. */
export function compactionContextOf(output: unknown): { context: string[] } | null {
  return output !== null && typeof output === "object" ? (output as { context: string[] }) : null;
}
