// What the last watchdog tick read, in words, for the admin page's header,
// doctor and the blind alert: one reading of the recorded tick. Pure and
// free of node imports (the admin page's bundle uses it too).

/** The recorded tick as /health and the ticks table give it. */
export interface TickFacts {
  blind: boolean;
  /** opencode servers that answered; absent from routers older than the field. */
  servers?: number;
  sessions?: number;
  /** What the tick made of opencode's database; null or absent from watchdogs older than that source. */
  db?: string | null;
}

/**
 * Blind while opencode runs: a source was there and none could be read. A
 * tick from a watchdog older than the database source was blind also when no
 * server answered; with servers 0 that meant nothing ran.
 */
export function tickBlind(t: TickFacts): boolean {
  if (!t.blind) return false;
  if (t.db !== undefined && t.db !== null) return true;
  return (t.servers ?? 1) > 0;
}

const servers = (n: number) => `${n} opencode server(s)`;

/** What could not be read, for a blind tick. */
export function blindDetail(t: TickFacts): string {
  const parts: string[] = [];
  if (t.db === "unreadable") parts.push("opencode.db could not be read");
  if (t.db === "unexpected_shape") parts.push("opencode.db is in a shape the watchdog does not know");
  if ((t.servers ?? 0) > 0)
    parts.push(`${servers(t.servers ?? 0)} answered but their sessions could not be read`);
  return parts.length > 0 ? parts.join("; ") : "opencode runs but its sessions could not be read";
}

/** "read opencode.db: 3 session(s) judged", "no opencode database found", "BLIND: ...". */
export function tickReadout(t: TickFacts): string {
  if (tickBlind(t)) return `BLIND: ${blindDetail(t)}`;
  const n = t.servers ?? 0;
  const judged = `${t.sessions ?? 0} session(s) judged`;
  if (t.db === undefined || t.db === null)
    return t.blind ? "no opencode running" : `read ${n > 0 ? servers(n) : "opencode"}: ${judged}`;
  if (t.db === "read") return `read opencode.db${n > 0 ? ` and ${servers(n)}` : ""}: ${judged}`;
  const dbNote: Record<string, string> = {
    missing: "; no opencode database found",
    unreadable: "; opencode.db could not be read",
    unexpected_shape: "; opencode.db is in a shape the watchdog does not know",
  };
  if (n > 0) return `read ${servers(n)}: ${judged}${dbNote[t.db] ?? ""}`;
  return t.db === "off"
    ? "opencode.db not read (watchdog.opencode_db.enabled false), no opencode server answered"
    : "no opencode database found, no opencode server answered";
}
