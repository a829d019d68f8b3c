// write has no diff in its metadata, so whether it changed the file is told
// by hashing the file before the call (tool.execute.before) and comparing it
// with the hash of the content written (done by the core). The content is
// hashed locally and dropped; it never leaves the plugin.
import { readFile, stat } from "node:fs/promises";
import { isAbsolute, resolve } from "node:path";
import { BoundedMap, sha256 } from "../shared/index.ts";
import type { ToolStarting } from "./events.ts";

/** Files larger than this are not hashed: the write is then judged without a prior. */
const MAX_BYTES = 8 * 1024 * 1024;

/** sha256 of a file's text; null when it does not exist; undefined when it cannot be read. */
export async function hashFile(path: string): Promise<string | null | undefined> {
  try {
    const st = await stat(path);
    if (!st.isFile() || st.size > MAX_BYTES) return undefined;
    return sha256(await readFile(path, "utf8"));
  } catch (err) {
    return (err as NodeJS.ErrnoException)?.code === "ENOENT" ? null : undefined;
  }
}

export class WriteProbe {
  private readonly priors: BoundedMap<string, string | null>;

  constructor(
    private readonly directory: string | null,
    capacity = 1024,
    private readonly hash: (path: string) => Promise<string | null | undefined> = hashFile,
  ) {
    this.priors = new BoundedMap(capacity);
  }

  get size(): number {
    return this.priors.size;
  }

  /** tool.execute.before: remembers the file's hash before a write. */
  async before(call: Pick<ToolStarting, "sessionId" | "callId" | "writePath">): Promise<void> {
    const path = call.writePath;
    if (path === undefined) return;
    const abs = isAbsolute(path) ? path : resolve(this.directory ?? ".", path);
    const h = await this.hash(abs);
    if (h !== undefined) this.priors.set(`${call.sessionId}\u0000${call.callId}`, h);
  }

  /** The hash recorded for a call, once (undefined: not known). */
  take(sessionId: string, callId: string): string | null | undefined {
    const k = `${sessionId}\u0000${callId}`;
    const v = this.priors.get(k);
    this.priors.delete(k);
    return v;
  }
}
