// session_samples: a heartbeat's numbers per session (turns since landed, the
// last landed change, context size), stored only when they changed since the
// session's previous sample, so an idle session adds nothing.
import type Database from "better-sqlite3";

export interface SampleRow {
  at: number;
  turns_since_landed: number;
  last_landed_at: number | null;
  context_tokens: number;
}

export function samplesTable(db: Database.Database) {
  const insert = db.prepare(
    `INSERT INTO session_samples (session_id, at, turns_since_landed, last_landed_at, context_tokens)
     SELECT @session_id, @at, @turns_since_landed, @last_landed_at, @context_tokens
     WHERE NOT EXISTS (
       SELECT 1 FROM (SELECT turns_since_landed AS t, last_landed_at AS l, context_tokens AS c
                        FROM session_samples WHERE session_id = @session_id ORDER BY at DESC, seq DESC LIMIT 1)
       WHERE t = @turns_since_landed AND l IS @last_landed_at AND c = @context_tokens)`,
  );
  const forSession = db.prepare<[string, number], SampleRow>(
    `SELECT at, turns_since_landed, last_landed_at, context_tokens FROM (
       SELECT * FROM session_samples WHERE session_id = ? ORDER BY at DESC, seq DESC LIMIT ?)
     ORDER BY at, seq`,
  );
  const prune = db.prepare("DELETE FROM session_samples WHERE at < ?");
  return {
    /** Stores the sample unless it repeats the session's last one; true when stored. */
    insert(sessionId: string, s: SampleRow): boolean {
      return insert.run({ session_id: sessionId, ...s }).changes > 0;
    },
    /** The session's latest `limit` samples, oldest first. */
    forSession(sessionId: string, limit: number): SampleRow[] {
      return forSession.all(sessionId, limit);
    },
    prune(cutoff: number): number {
      return prune.run(cutoff).changes;
    },
  };
}
export type SamplesTable = ReturnType<typeof samplesTable>;
