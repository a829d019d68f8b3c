// The fixed split for tuning and checking: a session's half depends on its id
// alone, so it never changes between runs, machines or corpus additions.
import { sha256 } from "../../shared/index.ts";

export type Half = "A" | "B";

/** Half A when the first byte of sha256(session id) is even, B when it is odd. */
export function halfOf(id: string): Half {
  return Number.parseInt(sha256(id).slice(0, 2), 16) % 2 === 0 ? "A" : "B";
}
