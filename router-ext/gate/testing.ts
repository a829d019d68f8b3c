// Test helpers for the gate: an in-memory GateStore and a way to serve the
// gate on a free loopback port. Used by the gate's tests only.
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { decideGate } from "../modes/gate-decision.ts";
import { GateFacts } from "./facts.ts";
import { gateFirstServer } from "./mount.ts";
import { type GateOptions, gateProxy } from "./proxy.ts";
import { gateRoutes } from "./routes.ts";
import type { GateDecision, GateIdentity, GateStore, RequestRecord } from "./types.ts";

/**
 * A GateStore in memory: the real facts (gate/facts.ts) and the real
 * decision (modes/gate-decision.ts), with refusals set by hand and parents
 * learnt from requests; records and decisions kept for the test to read.
 */
export class MemoryGateStore implements GateStore {
  readonly records: RequestRecord[] = [];
  readonly decisions: GateIdentity[] = [];
  readonly facts = new GateFacts();
  private clock = 0;

  refuseSession(id: string, reason: string): void {
    this.set("session", id, "stopped", reason);
  }
  refuseTree(root: string, reason: string): void {
    this.set("tree", root, "stopped", reason);
  }
  lift(id: string): void {
    this.set("session", id, "running", null);
    this.set("tree", id, "running", null);
  }

  decide(identity: GateIdentity): GateDecision {
    this.decisions.push(identity);
    this.facts.learn(identity);
    return decideGate(this.facts, identity);
  }

  /** decide without learning or counting (GET). */
  peek(identity: GateIdentity): GateDecision {
    return decideGate(this.facts, identity);
  }

  recordRequest(r: RequestRecord): void {
    this.records.push(r);
    this.facts.observe(r);
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

  private set(
    scope: "session" | "tree",
    key: string,
    state: "stopped" | "running",
    reason: string | null,
  ): void {
    this.facts.apply({ kind: "refusal", scope, key, state, by: "test", at: ++this.clock, reason });
  }
}

export interface ServedGate {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Serve the gate (proxy on /v1, GET /gate/:session on hono) on 127.0.0.1, free port, as the server does. */
export async function serveGate(opts: GateOptions): Promise<ServedGate> {
  const app = gateRoutes(opts);
  const proxy = gateProxy(opts);
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve(
      { fetch: app.fetch, port: 0, hostname: "127.0.0.1", createServer: gateFirstServer(() => proxy) },
      () => resolve(s),
    );
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
