// Test helpers for the gate: an in-memory GateStore and a way to serve the
// gate on a free loopback port. Used by the gate's tests and bench only.
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { nodeBody } from "../server/incoming-body.ts";
import { streamFetch } from "../server/stream-fetch.ts";
import { type GateOptions, gateRoutes } from "./index.ts";
import type { GateDecision, GateIdentity, GateStore, RequestRecord } from "./store.ts";

/** A GateStore in memory: refusals by session or by tree root, parents learnt from requests. */
export class MemoryGateStore implements GateStore {
  readonly records: RequestRecord[] = [];
  readonly decisions: GateIdentity[] = [];
  private readonly parents = new Map<string, string>();
  private readonly sessions = new Map<string, string>();
  private readonly trees = new Map<string, string>();

  refuseSession(id: string, reason: string): void {
    this.sessions.set(id, reason);
  }
  refuseTree(root: string, reason: string): void {
    this.trees.set(root, reason);
  }
  lift(id: string): void {
    this.sessions.delete(id);
    this.trees.delete(id);
  }

  rootOf(id: string): string {
    let cur = id;
    const seen = new Set<string>();
    for (;;) {
      const p = this.parents.get(cur);
      if (!p || seen.has(p)) return cur;
      seen.add(cur);
      cur = p;
    }
  }

  decide(identity: GateIdentity): GateDecision {
    this.decisions.push(identity);
    const id = identity.sessionId;
    if (!id) return { refused: false, scope: null, reason: null, rootId: null };
    if (identity.parent && identity.parent !== id) this.parents.set(id, identity.parent);
    return this.peek(identity);
  }

  /** decide without learning or counting (GET). */
  peek(identity: GateIdentity): GateDecision {
    const id = identity.sessionId;
    if (!id) return { refused: false, scope: null, reason: null, rootId: null };
    const root = this.rootOf(id);
    const own = this.sessions.get(id);
    if (own !== undefined) return { refused: true, scope: "session", reason: own, rootId: root };
    const tree = this.trees.get(root);
    if (tree !== undefined) return { refused: true, scope: "tree", reason: tree, rootId: root };
    return { refused: false, scope: null, reason: null, rootId: root };
  }

  recordRequest(record: RequestRecord): void {
    this.records.push(record);
  }

  /** Records arrive when a response body ends, just after the client has read it. */
  async waitRecords(n: number, timeoutMs = 5000): Promise<RequestRecord[]> {
    const until = Date.now() + timeoutMs;
    while (this.records.length < n) {
      if (Date.now() > until) throw new Error(`expected ${n} records, have ${this.records.length}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    return this.records;
  }
}

export interface ServedGate {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Serve gateRoutes(opts) with @hono/node-server on 127.0.0.1, free port. */
export async function serveGate(opts: GateOptions): Promise<ServedGate> {
  const app = gateRoutes({ requestBody: nodeBody, streamFetch, ...opts });
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
    s.once("error", reject);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        const s = server as unknown as { closeAllConnections?: () => void };
        s.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/** The client key the gate tests present. */
export const TEST_CLIENT = { name: "test", key: "sg-test-client-key-0123456789" } as const;

/** fetch with the test client key as its bearer token (unless the call sets its own Authorization). */
export function keyedFetch(input: string | URL, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (!headers.has("authorization")) headers.set("authorization", `Bearer ${TEST_CLIENT.key}`);
  return fetch(input, { ...init, headers });
}
