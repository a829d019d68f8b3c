// Who is asking: the identity headers of a model request (ours first, then
// opencode's own), each checked, so a malformed value counts as absent.
import { z } from "zod";
import { agentSchema, idSchema } from "../../shared/index.ts";
import type { GateIdentity, PluginLinkHeaders } from "./types.ts";

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

const reportUrl = z.url({ protocol: /^https?$/ }).max(300);
const reportState = z.enum(["pending", "ok", "failing"]);

/** The plugin's report headers; null without an instance id (no plugin, or one from before them). */
function linkFrom(headers: HeaderSource): PluginLinkHeaders | null {
  const instanceId = header(headers, headerValue, "x-stallguard-instance");
  if (instanceId === null) return null;
  return {
    instanceId,
    reportTo: header(headers, reportUrl, "x-stallguard-report-to"),
    state: header(headers, reportState, "x-stallguard-report-state") as PluginLinkHeaders["state"],
  };
}

/** Identity from the request headers: ours first, then opencode's own. */
export function identityFrom(headers: HeaderSource): GateIdentity {
  const link = linkFrom(headers);
  return {
    ...(link ? { link } : {}),
    // Session ids and agent slugs by the wire's own rules (shared/wire.ts).
    sessionId: header(headers, idSchema, "x-router-conversation", "x-session-id"),
    agent: header(headers, agentSchema, "x-router-agent"),
    parent: header(headers, idSchema, "x-router-parent", "x-parent-session-id"),
    pluginVersion: header(headers, headerValue, "x-stallguard-plugin"),
  };
}
