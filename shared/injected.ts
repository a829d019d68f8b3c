// Tells injected continuation turns (nobody typed them) from real user turns.
import { sha256 } from "./hash.ts";

export interface TextPartLike {
  type?: unknown;
  text?: unknown;
  synthetic?: unknown;
  ignored?: unknown;
  metadata?: unknown;
}

/**
 * A user turn is injected when all its text parts are synthetic, when any
 * carries `metadata.compaction_continue` (opencode's post-compaction continue
 * and oh-my-opencode's continuations), or when any carries a configured marker
 * (oh-my-opencode's directive prefix and its internal-initiator comment).
 */
export function isInjectedTurn(parts: readonly TextPartLike[], markers: readonly string[]): boolean {
  const texts = (Array.isArray(parts) ? parts : []).filter(
    (p) => p !== null && typeof p === "object" && p.type === "text",
  );
  if (texts.length === 0) return false;
  if (
    texts.some(
      (p) =>
        p.metadata !== null &&
        typeof p.metadata === "object" &&
        (p.metadata as Record<string, unknown>).compaction_continue === true,
    )
  )
    return true;
  if (texts.some((p) => typeof p.text === "string" && markers.some((m) => (p.text as string).includes(m))))
    return true;
  return texts.every((p) => p.synthetic === true);
}

/** opencode's own resume turn after a compaction (a synthetic text part marked compaction_continue). */
export function isResumeTurn(parts: readonly TextPartLike[]): boolean {
  return (Array.isArray(parts) ? parts : []).some(
    (p) =>
      p !== null &&
      typeof p === "object" &&
      p.type === "text" &&
      p.metadata !== null &&
      typeof p.metadata === "object" &&
      (p.metadata as Record<string, unknown>).compaction_continue === true,
  );
}

/**
 * A hash of a user turn's typed text (never the text itself): the same words
 * sent again ("continue") are a nudge, not a person steering. Null without text.
 */
export function userTextHash(parts: readonly TextPartLike[]): string | null {
  const texts = (Array.isArray(parts) ? parts : [])
    .filter((p) => p !== null && typeof p === "object" && p.type === "text" && typeof p.text === "string")
    .map((p) => (p.text as string).trim());
  return texts.length ? sha256(texts.join("\u0000")).slice(0, 32) : null;
}
