// Which database errors mean "cannot take a write now" (worth a retry later)
// rather than "this write is bad": SQLite's result codes, PostgreSQL's
// SQLSTATEs and the socket errors of a server that went away.

/** SQLITE_BUSY and its kin: another connection holds the lock (PostgreSQL: lock not available, deadlock). */
export function isBusy(err: unknown): boolean {
  const code = sqliteCode(err);
  return (
    code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED") || ["55P03", "40P01"].includes(code)
  );
}

/** PostgreSQL SQLSTATEs and socket errors for a database that cannot take a write now. */
const UNAVAILABLE_CODES = [
  "53100",
  "25006",
  "57P01",
  "57P03",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
];

/** The database cannot take a write now (locked, full, read-only, I/O error): worth a retry later. */
export function isUnavailable(err: unknown): boolean {
  const code = sqliteCode(err);
  return (
    isBusy(err) ||
    ["SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_FULL", "SQLITE_CANTOPEN", "SQLITE_PERM"].some((c) =>
      code.startsWith(c),
    ) ||
    code.startsWith("08") ||
    UNAVAILABLE_CODES.includes(code)
  );
}

export function sqliteCode(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  return typeof code === "string" ? code : "";
}
