// The few opencode server routes the watchdog reads (v1, opencode 1.18):
// GET /session, GET /session/{id}, GET /session/{id}/children and
// GET /session/{id}/message. Each answer is shape-checked: an unexpected shape
// is a ShapeError (the watchdog is blind), never an empty "all healthy".
import { z } from "zod";

/** The fields the watchdog relies on; everything else in a Session is ignored. */
const sessionSchema = z.looseObject({
  id: z.string().min(1).max(200),
  parentID: z.string().min(1).max(200).nullish(),
  directory: z.string().nullish(),
  time: z.looseObject({ updated: z.number(), created: z.number().optional() }),
});
export type ApiSession = z.infer<typeof sessionSchema>;

const messageSchema = z.looseObject({
  info: z.looseObject({ role: z.string() }),
  parts: z.array(z.unknown()),
});

export class ShapeError extends Error {
  constructor(
    readonly route: string,
    detail: string,
  ) {
    super(`unexpected opencode API shape at ${route}: ${detail}`);
  }
}

export class ApiError extends Error {
  constructor(
    readonly route: string,
    readonly status: number | null,
    detail: string,
  ) {
    super(`opencode ${route}: ${detail}`);
  }
}

function firstIssue(err: z.ZodError): string {
  const i = err.issues[0];
  return i ? `${i.path.join(".") || "(root)"}: ${i.message}` : "invalid";
}

export class OpencodeApi {
  constructor(
    readonly baseUrl: string,
    private readonly opts: { timeoutMs: number; fetchImpl: typeof fetch; auth: string | null },
  ) {}

  private async get(path: string, route: string): Promise<unknown> {
    let res: Response;
    try {
      res = await this.opts.fetchImpl(`${this.baseUrl}${path}`, {
        headers: { accept: "application/json", ...(this.opts.auth ? { authorization: this.opts.auth } : {}) },
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
    } catch (err) {
      throw new ApiError(route, null, (err as Error).message);
    }
    const text = await res.text().catch(() => "");
    if (!res.ok) throw new ApiError(route, res.status, `HTTP ${res.status}`);
    try {
      return JSON.parse(text);
    } catch {
      throw new ShapeError(route, "not JSON");
    }
  }

  private sessions(json: unknown, route: string): ApiSession[] {
    if (!Array.isArray(json)) throw new ShapeError(route, "expected an array of sessions");
    const out: ApiSession[] = [];
    for (const item of json) {
      const r = sessionSchema.safeParse(item);
      if (!r.success) throw new ShapeError(route, firstIssue(r.error));
      out.push(r.data);
    }
    return out;
  }

  /** Sessions updated at or after `since` (epoch ms), newest first. */
  async listSessions(since: number, limit: number): Promise<ApiSession[]> {
    const json = await this.get(
      `/session?start=${Math.max(0, Math.floor(since))}&limit=${limit}`,
      "GET /session",
    );
    return this.sessions(json, "GET /session");
  }

  /** One session, or null when opencode says it does not exist. */
  async getSession(id: string): Promise<ApiSession | null> {
    try {
      const json = await this.get(`/session/${encodeURIComponent(id)}`, "GET /session/{id}");
      const r = sessionSchema.safeParse(json);
      if (!r.success) throw new ShapeError("GET /session/{id}", firstIssue(r.error));
      return r.data;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return null;
      throw err;
    }
  }

  async children(id: string): Promise<ApiSession[]> {
    const json = await this.get(`/session/${encodeURIComponent(id)}/children`, "GET /session/{id}/children");
    return this.sessions(json, "GET /session/{id}/children");
  }

  /** All messages of a session, oldest first, as {info, parts} records. */
  async messages(id: string): Promise<Array<{ info: unknown; parts: unknown }>> {
    const route = "GET /session/{id}/message";
    const json = await this.get(`/session/${encodeURIComponent(id)}/message`, route);
    if (!Array.isArray(json)) throw new ShapeError(route, "expected an array of messages");
    for (const m of json) {
      const r = messageSchema.safeParse(m);
      if (!r.success) throw new ShapeError(route, firstIssue(r.error));
    }
    return json as Array<{ info: unknown; parts: unknown }>;
  }
}
