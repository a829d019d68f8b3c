// The answers the gate gives itself (never forwarded): OpenAI-shaped error
// bodies for a refusal, a context cap and the gate's own failures.
import type { GateDecision, GateIdentity } from "./types.ts";

export type ErrorBody = { error: { message: string; type: string; code: string } };

export function errorBody(message: string, type: string, code: string): ErrorBody {
  return { error: { message, type, code } };
}

/**
 * The refusal's OpenAI-shaped body. The message names the session and how to
 * resume, and stays clear of the words opencode's retry matcher looks for
 * ("rate limit", "try again", "unavailable", ...), so the status alone decides
 * whether opencode retries.
 */
export function refusalBody(identity: GateIdentity, decision: GateDecision): ErrorBody {
  const who = identity.sessionId ?? "(no session id)";
  const root = decision.rootId ?? identity.sessionId;
  const tree = decision.scope === "tree" && root && root !== identity.sessionId ? ` (tree ${root})` : "";
  const reason = decision.reason ? `: ${decision.reason}` : "";
  const resume = root
    ? `Resume the tree in the stallguard admin page, or POST /api/trees/${root}/resume.`
    : "Resume it in the stallguard admin page.";
  return errorBody(
    `stallguard stopped session ${who}${tree}${reason}. ${resume}`,
    "stallguard_refused",
    decision.scope === "tree" ? "tree_refused" : "session_refused",
  );
}

/**
 * The over-cap answer (auto_limit_context, auto_recover stage 2): HTTP 413 with
 * OpenAI's context_length_exceeded code, which opencode classifies as a context
 * overflow and answers with its own compaction (never retried). The message
 * avoids the words that veto that classification ("rate limit", "too many requests").
 */
export function contextCapBody(identity: GateIdentity, over: { cap: number; tokens: number }): ErrorBody {
  const who = identity.sessionId ?? "(no session id)";
  return errorBody(
    `stallguard context cap: session ${who} is at ${over.tokens} prompt tokens, over the cap of ${over.cap} set by progress.mode. Compact the conversation to continue.`,
    "invalid_request_error",
    "context_length_exceeded",
  );
}

export function json(status: number, body: unknown, extra: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...extra },
  });
}
