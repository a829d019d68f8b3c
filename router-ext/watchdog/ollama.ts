// The second opinion: an Ollama-compatible chat endpoint (POST /api/chat)
// asked yes or no on a digest. Any failure (down, slow, odd answer) returns
// null, and the deterministic verdict stands alone.

export interface SecondOpinion {
  model: string;
  stuck: boolean;
  reason: string;
}

export const QUESTION = "Is this agent looping without progress? Answer yes or no, with a one-line reason.";

const SYSTEM =
  "You review a digest of an AI coding agent's recent tool calls (tool names, targets, exit codes). " +
  "A loop is the same calls or failures repeating while nothing lands (no edit with a diff, no commit). " +
  "Answer on one line: 'yes: <reason>' or 'no: <reason>'.";

/** Reads "yes: reason" / "No - reason" / "YES. reason"; null when the answer has neither word first. */
export function parseOpinion(text: string): { stuck: boolean; reason: string } | null {
  const line =
    text
      .replace(/<think>[\s\S]*?<\/think>/gi, "")
      .split(/\r?\n/)
      .map((l) => l.trim())
      .find((l) => l.length > 0) ?? "";
  const m = /^[\s*"'`>#-]*(yes|no)\b[\s.,:;!)*"'-]*(.*)$/i.exec(line);
  if (!m) return null;
  const reason = (m[2] ?? "")
    .replace(/[^\x20-\x7e]/g, "?")
    .trim()
    .slice(0, 300);
  return { stuck: (m[1] ?? "").toLowerCase() === "yes", reason };
}

export async function askSecondOpinion(opts: {
  baseUrl: string;
  model: string;
  digest: string;
  timeoutMs: number;
  fetchImpl?: typeof fetch;
}): Promise<SecondOpinion | null> {
  const f = opts.fetchImpl ?? fetch;
  try {
    const res = await f(`${opts.baseUrl.replace(/\/+$/, "")}/api/chat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      signal: AbortSignal.timeout(opts.timeoutMs),
      body: JSON.stringify({
        model: opts.model,
        stream: false,
        options: { temperature: 0, num_predict: 80 },
        messages: [
          { role: "system", content: SYSTEM },
          { role: "user", content: `${opts.digest}\n\n${QUESTION}` },
        ],
      }),
    });
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      return null;
    }
    const json = (await res.json()) as { message?: { content?: unknown } };
    const content = json?.message?.content;
    if (typeof content !== "string") return null;
    const op = parseOpinion(content);
    return op ? { model: opts.model.slice(0, 200), ...op } : null;
  } catch {
    return null;
  }
}
