// Tells injected continuation turns (nobody typed them) from real user turns.

export interface TextPartLike {
  type?: unknown;
  text?: unknown;
  synthetic?: unknown;
  ignored?: unknown;
  metadata?: unknown;
}

/**
 * A user turn is injected when all its text parts are synthetic, or when any
 * carries a configured marker (oh-my-opencode's directive prefix and its
 * internal-initiator comment).
 */
export function isInjectedTurn(parts: readonly TextPartLike[], markers: readonly string[]): boolean {
  const texts = parts.filter((p) => p && p.type === "text");
  if (texts.length === 0) return false;
  if (texts.some((p) => typeof p.text === "string" && markers.some((m) => (p.text as string).includes(m))))
    return true;
  return texts.every((p) => p.synthetic === true);
}
