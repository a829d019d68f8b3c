import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Receiver, startReceiver } from "../plugin/_test-receiver.ts";
import type { ProgressMessage } from "../shared/index.ts";
import { freePort } from "../test/helpers/free-port.ts";
import { postProgress } from "./progress-client.ts";

const tick: ProgressMessage = {
  type: "watchdog_tick",
  at: 1_700_000_000_000,
  servers: 1,
  sessions: 0,
  flagged: 0,
  blind: false,
};

// A real node:http receiver on loopback (plugin/_test-receiver.ts): the
// client's request and its reading of real answers, not a stubbed fetch.
describe("postProgress", () => {
  let rx: Receiver;
  beforeAll(async () => {
    rx = await startReceiver({ token: "tok" });
  });
  afterAll(() => rx.close());

  it("posts JSON with the bearer token and reads a 2xx answer as sent, with its body", async () => {
    rx.setMode("ok");
    const r = await postProgress(`${rx.url}/`, tick, { token: "tok", timeoutMs: 5_000 });
    expect(r).toMatchObject({ status: "sent", http: 200 });
    expect(JSON.parse(r.text)).toMatchObject({ accepted: 1 });
    expect(rx.messages.at(-1)).toEqual(tick);
    expect(rx.bodies.at(-1)?.authorization).toBe("Bearer tok");
  });

  it("classes a wrong token as refused, a busy router as retry, a bad body as rejected", async () => {
    rx.setMode("ok");
    expect((await postProgress(rx.url, tick, { token: "wrong", timeoutMs: 5_000 })).status).toBe("refused");
    rx.setMode({ status: 503 });
    expect(await postProgress(rx.url, tick, { token: "tok", timeoutMs: 5_000 })).toMatchObject({
      status: "retry",
      http: 503,
      detail: "HTTP 503",
    });
    rx.setMode({ status: 400 });
    expect((await postProgress(rx.url, [tick], { token: "tok", timeoutMs: 5_000 })).status).toBe("rejected");
  });

  it("never throws when nobody listens: retry, with the network error as the detail", async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const r = await postProgress(closed, tick, { token: "tok", timeoutMs: 5_000 });
    expect(r).toMatchObject({ status: "retry", http: null, text: "" });
    expect(r.detail).toBe("ECONNREFUSED");
  });
});
