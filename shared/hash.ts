import { createHash } from "node:crypto";

/** sha256 hex of a string. Pure computation; available under Node and Bun. */
export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** A short hash for display next to a target (e.g. a grep pattern). */
export function shortHash(text: string): string {
  return sha256(text).slice(0, 8);
}
