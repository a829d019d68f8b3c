// Who is asking: the identity headers of a model request (ours first, then
// opencode's own), each checked, so a malformed value counts as absent.
import { z } from "zod";
import { agentSchema, idSchema } from "../../shared/wire.ts";
import type { GateIdentity } from "./store.ts";

/** An identity header: printable ASCII without spaces, bounded. Anything else counts as absent. */
export const headerValue = z
  .string()
  .min(1)
  .max(256)
  .regex(/^[\x21-\x7e]+$/);

/** Where header values come from: a fetch Headers, or a node request (gate/headers.ts headerOf). */
export interface HeaderSource {
  get(name: string): string | null;
}

function header(headers: HeaderSource, schema: z.ZodType<string>, ...names: string[]): string | null {
  for (const name of names) {
    const v = headers.get(name);
    if (v === null) continue;
    const ok = schema.safeParse(v.trim());
    if (ok.success) return ok.data;
  }
  return null;
}

/** Identity from the request headers: ours first, then opencode's own. */
export function identityFrom(headers: HeaderSource): GateIdentity {
  return {
    // Session ids and agent slugs by the wire's own rules (shared/wire.ts).
    sessionId: header(headers, idSchema, "x-router-conversation", "x-session-id"),
    agent: header(headers, agentSchema, "x-router-agent"),
    parent: header(headers, idSchema, "x-router-parent", "x-parent-session-id"),
    pluginVersion: header(headers, headerValue, "x-stallguard-plugin"),
  };
}
