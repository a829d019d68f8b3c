// What the admin routes share: the JSON body reader (an empty body is {}),
// the query reader, zod issues as "path: message" lines, and the `by` name an
// admin action is recorded under.
import type { Context } from "hono";
import { z } from "zod";

/** Who did it, as recorded: printable ASCII, at most 100 characters. */
export const byName = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[\x20-\x7e]+$/, "printable ASCII");

export function issuesOf(error: z.ZodError): string[] {
  return error.issues.flatMap((i) =>
    i.code === "unrecognized_keys"
      ? i.keys.map((k) => `${[...i.path, k].join(".")}: unknown field`)
      : [`${i.path.join(".") || "(root)"}: ${i.message}`],
  );
}

/** Reads a JSON body that may be empty ({}), or returns { ok: false } when it is not JSON. */
export async function jsonBody(c: Context): Promise<{ ok: true; value: unknown } | { ok: false }> {
  const text = await c.req.text();
  if (text.trim() === "") return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/** An admin write body read and validated, or the 400 answer to send instead. */
export async function validBody<T>(
  c: Context,
  schema: z.ZodType<T>,
): Promise<{ ok: true; data: T } | { ok: false; answer: Response }> {
  const body = await jsonBody(c);
  if (!body.ok)
    return {
      ok: false,
      answer: c.json({ error: "body is not JSON", issues: ["(root): invalid JSON"] }, 400),
    };
  const parsed = schema.safeParse(body.value);
  if (!parsed.success)
    return { ok: false, answer: c.json({ error: "invalid body", issues: issuesOf(parsed.error) }, 400) };
  return { ok: true, data: parsed.data };
}

/**
 * A query string validated by a strict schema (an unknown or repeated parameter
 * is an error too), or the 400 answer to send instead.
 */
export function validQuery<T>(
  c: Context,
  schema: z.ZodType<T>,
): { ok: true; data: T } | { ok: false; answer: Response } {
  const raw = c.req.queries();
  const repeated = Object.keys(raw).filter((k) => (raw[k]?.length ?? 0) > 1);
  const parsed = schema.safeParse(Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, v[0]])));
  const issues = [...repeated.map((k) => `${k}: given more than once`)];
  if (!parsed.success) issues.push(...issuesOf(parsed.error));
  if (issues.length > 0 || !parsed.success)
    return { ok: false, answer: c.json({ error: "invalid query", issues }, 400) };
  return { ok: true, data: parsed.data };
}
