// Reads what a SQLite file holds (its application id and table names) from
// the file's own bytes, without SQLite: opening a WAL-mode file, even
// read-only, creates its -wal and -shm files (or writes the -shm's read
// marks), and a file that is not ours must be left exactly as it was. Pages
// still in the -wal file (committed, not yet checkpointed) are read from
// there, as SQLite would. File format: sqlite.org/fileformat2.html.
import { closeSync, openSync, readSync } from "node:fs";

const MAGIC = "SQLite format 3\u0000";
/** Visiting more pages than this means a corrupt or hostile file: stop. */
const MAX_PAGES = 20_000;

export interface SqliteSummary {
  /** PRAGMA application_id, from the header. */
  applicationId: number;
  /** Names of the tables in sqlite_master (as far as the main file has them). */
  tables: string[];
}

/** A SQLite varint at `at`: its value (as a number; names and sizes fit) and its length. */
function varint(b: Uint8Array, at: number): [number, number] {
  let v = 0;
  for (let i = 0; i < 8; i++) {
    const byte = b[at + i] ?? 0;
    v = v * 128 + (byte & 0x7f);
    if ((byte & 0x80) === 0) return [v, i + 1];
  }
  return [v * 256 + (b[at + 8] ?? 0), 9];
}

/** Bytes of a record value with this serial type (file format 2.1). */
function serialSize(t: number): number {
  if (t >= 12) return Math.floor((t - (t % 2 === 0 ? 12 : 13)) / 2);
  return [0, 1, 2, 3, 4, 6, 8, 8, 0, 0, 0, 0][t] ?? 0;
}

/** The first two columns of a sqlite_master record (type, name) when both are text. */
function typeAndName(rec: Uint8Array, decode: (b: Uint8Array) => string): [string, string] | null {
  const [headerSize, n] = varint(rec, 0);
  const types: number[] = [];
  for (let at = n; at < headerSize && types.length < 2; ) {
    const [t, len] = varint(rec, at);
    types.push(t);
    at += len;
  }
  const [t0, t1] = types;
  if (t0 === undefined || t1 === undefined || t0 < 13 || t0 % 2 === 0 || t1 < 13 || t1 % 2 === 0) return null;
  const a = serialSize(t0);
  const b = serialSize(t1);
  return [
    decode(rec.subarray(headerSize, headerSize + a)),
    decode(rec.subarray(headerSize + a, headerSize + a + b)),
  ];
}

interface Layout {
  pageSize: number;
  usable: number;
  read(page: number): Buffer;
}

/** The local part of a table leaf cell's payload (the part on this page; enough for type and name). */
function leafPayload(page: Uint8Array, cell: number, usable: number): Uint8Array {
  const [size, a] = varint(page, cell);
  const [, b] = varint(page, cell + a);
  const x = usable - 35;
  let local = size;
  if (size > x) {
    const m = Math.floor(((usable - 12) * 32) / 255) - 23;
    const k = m + ((size - m) % (usable - 4));
    local = k <= x ? k : m;
  }
  return page.subarray(cell + a + b, cell + a + b + local);
}

/** Walks sqlite_master's b-tree (root page 1) and collects the table names. */
function masterTables(l: Layout, decode: (b: Uint8Array) => string): string[] {
  const tables: string[] = [];
  const seen = new Set<number>();
  const stack = [1];
  while (stack.length > 0 && seen.size < MAX_PAGES) {
    const no = stack.pop() as number;
    if (seen.has(no)) continue;
    seen.add(no);
    const page = l.read(no);
    const head = no === 1 ? 100 : 0;
    const kind = page[head];
    const cells = ((page[head + 3] ?? 0) << 8) | (page[head + 4] ?? 0);
    const interior = kind === 5;
    if (!interior && kind !== 13) break;
    const view = new DataView(page.buffer, page.byteOffset, page.byteLength);
    const children: number[] = [];
    for (let i = 0; i < cells; i++) {
      const cell = view.getUint16(head + (interior ? 12 : 8) + 2 * i);
      if (cell >= page.length) continue;
      if (interior) children.push(view.getUint32(cell));
      else {
        const row = typeAndName(leafPayload(page, cell, l.usable), decode);
        if (row?.[0] === "table") tables.push(row[1]);
      }
    }
    // Left to right, as SQLite lists them: the right-most child last.
    if (interior) stack.push(view.getUint32(head + 8), ...children.reverse());
  }
  return tables;
}

const validPageSize = (n: number) => n >= 512 && n <= 65_536 && (n & (n - 1)) === 0;

/** The newest committed copy of each page in the -wal file: page number -> file offset of its data. */
interface WalIndex {
  pageSize: number;
  pages: Map<number, number>;
}

/** Reads the frame headers of a -wal file (24 bytes each, not the pages); null when it is not a usable one. */
function readWal(fd: number): WalIndex | null {
  const head = Buffer.alloc(32);
  if (readSync(fd, head, 0, 32, 0) < 32) return null;
  const magic = head.readUInt32BE(0);
  if (magic !== 0x377f0682 && magic !== 0x377f0683) return null;
  const pageSize = head.readUInt32BE(8);
  if (!validPageSize(pageSize)) return null;
  const salt = [head.readUInt32BE(16), head.readUInt32BE(20)];
  const pages = new Map<number, number>();
  const pending = new Map<number, number>();
  const frame = Buffer.alloc(24);
  // Frames of an older generation carry other salts: they end the log.
  for (let at = 32; readSync(fd, frame, 0, 24, at) === 24; at += 24 + pageSize) {
    if (frame.readUInt32BE(8) !== salt[0] || frame.readUInt32BE(12) !== salt[1]) break;
    pending.set(frame.readUInt32BE(0), at + 24);
    if (frame.readUInt32BE(4) === 0) continue;
    for (const [page, offset] of pending) pages.set(page, offset);
    pending.clear();
  }
  return { pageSize, pages };
}

function openWal(path: string): number | null {
  try {
    return openSync(`${path}-wal`, "r");
  } catch {
    return null;
  }
}

/**
 * What the SQLite file at `path` holds, pages still in its -wal file
 * included; null when it is empty (a new file), "not sqlite" when it is
 * something else. Reads only; never writes or creates anything.
 */
export function readSqliteSummary(path: string): SqliteSummary | null | "not sqlite" {
  const fd = openSync(path, "r");
  const walFd = openWal(path);
  try {
    const header = Buffer.alloc(100);
    const got = readSync(fd, header, 0, 100, 0);
    if (got > 0 && (got < 100 || header.toString("latin1", 0, 16) !== MAGIC)) return "not sqlite";
    const wal = walFd === null ? null : readWal(walFd);
    const raw = got === 100 ? header.readUInt16BE(16) : 0;
    const pageSize = raw === 1 ? 65_536 : raw || (wal?.pageSize ?? 0);
    if (!validPageSize(pageSize)) return got === 0 ? null : "not sqlite";
    const read = (page: number): Buffer => {
      const buf = Buffer.alloc(pageSize);
      const inWal = wal?.pageSize === pageSize ? wal.pages.get(page) : undefined;
      if (inWal !== undefined && walFd !== null) readSync(walFd, buf, 0, pageSize, inWal);
      else readSync(fd, buf, 0, pageSize, (page - 1) * pageSize);
      return buf;
    };
    const first = read(1);
    if (first.toString("latin1", 0, 16) !== MAGIC) return got === 0 ? null : "not sqlite";
    const encoding = first.readUInt32BE(56);
    const decoder = new TextDecoder(encoding === 2 ? "utf-16le" : encoding === 3 ? "utf-16be" : "utf-8");
    const layout: Layout = { pageSize, usable: pageSize - first.readUInt8(20), read };
    return {
      applicationId: first.readUInt32BE(68),
      tables: masterTables(layout, (b) => decoder.decode(b)),
    };
  } finally {
    closeSync(fd);
    if (walFd !== null) closeSync(walFd);
  }
}
