// Whether the database takes writes now, asked without writing and without
// waiting (/health must answer while another process holds the lock): its
// file must be writable by this process (a read-only file or mount is not),
// and a write transaction must start at once.
import { accessSync, constants } from "node:fs";
import type Database from "better-sqlite3";

export function databaseWritable(db: Database.Database): boolean {
  if (!fileWritable(db.name)) return false;
  const wait = db.pragma("busy_timeout", { simple: true }) as number;
  db.pragma("busy_timeout = 0");
  try {
    db.prepare("BEGIN IMMEDIATE").run();
    db.prepare("ROLLBACK").run();
    return true;
  } catch {
    return false;
  } finally {
    db.pragma(`busy_timeout = ${wait}`);
  }
}

function fileWritable(path: string): boolean {
  if (path === ":memory:" || path === "") return true;
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
