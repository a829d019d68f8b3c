// What test/e2e/attacks.test.ts drives the real server with: a database
// snapshot (every row of every table, through a second connection), raw HTTP
// requests (any Host, Origin or content type, as a browser or curl could send
// them), a listening socket that records what arrives, and `stallguard serve`
// as its own process (the built bundle), for attacks on start-up.
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";

/**
 * Every row of every table, hashed: equal snapshots mean nothing was written.
 * router_runs is left out: serve moves its own alive mark there on a clock
 * (every 15 s), whatever requests arrive.
 */
export function snapshot(dbPath: string): string {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'router_runs' ORDER BY name")
      .all() as Array<{ name: string }>;
    const h = createHash("sha256");
    for (const { name } of tables)
      h.update(name).update(JSON.stringify(db.prepare(`SELECT * FROM "${name}"`).all()));
    return h.digest("hex");
  } finally {
    db.close();
  }
}

export type Raw = { status: number; body: string };

/** A raw HTTP request: any Host, Origin or content type, as a browser or curl could send them. */
export function raw(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        headers: { ...headers, ...(body ? { "content-length": String(Buffer.byteLength(body)) } : {}) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          text += d;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

export interface Recorder {
  url: string;
  /** Each request that arrived: its path and its Authorization header ("" when none). */
  seen: Array<{ path: string; authorization: string }>;
  close(): Promise<void>;
}

/** A real listening socket on loopback that answers every request 200 `[]` and records what arrived. */
export async function startRecorder(): Promise<Recorder> {
  const seen: Recorder["seen"] = [];
  const srv = createServer((req, res) => {
    seen.push({ path: req.url ?? "", authorization: req.headers.authorization ?? "" });
    res.writeHead(200, { "content-type": "application/json" }).end("[]");
  });
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`,
    seen,
    close: () =>
      new Promise((resolve) => {
        srv.close(() => resolve());
        srv.closeAllConnections();
      }),
  };
}

const BUNDLE = fileURLToPath(new URL("../../dist/stallguard.mjs", import.meta.url));

export interface ServeProcess {
  proc: ChildProcess;
  /** Its URL once it listens; rejects with its output when it exits first. */
  listening: Promise<string>;
  /** Its exit code (signal: null). */
  exited: Promise<number | null>;
  output(): string;
}

/** `stallguard serve --port 0` as its own process, from the bundle global-setup builds. */
export function spawnServe(args: string[], env: NodeJS.ProcessEnv): ServeProcess {
  const proc = spawn(process.execPath, [BUNDLE, "serve", "--port", "0", ...args], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  const listening = new Promise<string>((resolve, reject) => {
    const check = () => {
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    };
    for (const s of [proc.stdout, proc.stderr])
      s?.on("data", (b: Buffer) => {
        out += b.toString();
        check();
      });
    void exited.then((code) => reject(new Error(`serve exited with ${code} before listening:\n${out}`)));
  });
  listening.catch(() => undefined);
  return { proc, listening, exited, output: () => out };
}
