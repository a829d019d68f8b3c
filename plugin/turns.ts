// Turns, user turns and spend, from the hook and event shapes to the core's
// observations. chat.headers fires once per LLM request (one agent step);
// chat.message once per user turn that arrives through the prompt API,
// including other plugins' injected continuations; opencode's own
// post-compaction continue turn shows up only as a synthetic text part.
import {
  isInjectedTurn,
  num,
  obj,
  promptTokensOf,
  slugAgent,
  type TextPartLike,
  text,
  type UsageObservation,
  userTextHash,
} from "../shared/index.ts";

/** What an LLM request is, from chat.headers' agent: the title call is not an agent step. */
export function requestKind(agent: unknown): "turn" | "compaction" | "title" {
  const a = slugAgent(agent);
  if (a === "title") return "title";
  if (a === "compaction") return "compaction";
  return "turn";
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
