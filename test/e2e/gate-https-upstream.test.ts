// The gate in front of an HTTPS upstream (most model routers are): the built
// `stallguard serve` as a child process, a real node:https upstream on
// loopback with a certificate made by openssl for the test. Trusted through
// NODE_EXTRA_CA_CERTS (what a user with a private CA sets), JSON and
// streaming answers pass byte for byte over TLS; untrusted, nothing reaches
// the upstream's handler and the client gets the gate's 502 naming why.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startServe } from "../../bench/serve-child.ts";

const KEY = "https-test-client-key-0123456789";
const ANSWER = JSON.stringify({
  id: "chatcmpl-tls",
  object: "chat.completion",
  model: "m-tls",
  choices: [{ index: 0, message: { role: "assistant", content: "over tls" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
});
const STREAM = [
  `data: ${JSON.stringify({ object: "chat.completion.chunk", model: "m-tls", choices: [{ index: 0, delta: { content: "over tls" } }] })}\n\n`,
  `data: ${JSON.stringify({ object: "chat.completion.chunk", model: "m-tls", choices: [], usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } })}\n\n`,
  "data: [DONE]\n\n",
].join("");

describe("the gate in front of an HTTPS upstream", () => {
  const dir = mkdtempSync(join(tmpdir(), "sg-gate-tls-"));
  const cert = join(dir, "cert.pem");
  const seen: string[] = [];
  let upstream: Server;
  let base = "";
  const serves: Array<Awaited<ReturnType<typeof startServe>>> = [];

  beforeAll(async () => {
    execFileSync("openssl", [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=DNS:localhost,IP:127.0.0.1",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      cert,
    ]);
    upstream = createServer(
      { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(cert) },
      (req, res) => {
        let body = "";
        req.on("data", (c: Buffer) => {
          body += c.toString();
        });
        req.on("end", () => {
          seen.push(body);
          const stream = /"stream"\s*:\s*true/.test(body);
          res.writeHead(200, { "content-type": stream ? "text/event-stream" : "application/json" });
          res.end(stream ? STREAM : ANSWER);
        });
      },
    );
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
    base = `https://localhost:${(upstream.address() as AddressInfo).port}/v1`;
  }, 30_000);

  afterAll(async () => {
    for (const s of serves) {
      const gone = new Promise((r) => s.proc.once("exit", r));
      s.proc.kill("SIGTERM");
      await gone;
    }
    await new Promise((r) => upstream.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  const serve = async (name: string, env: Record<string, string>) => {
    const home = join(dir, name);
    mkdirSync(home);
    const s = await startServe(home, {
      args: ["--upstream", base],
      env: { STALLGUARD_CLIENT_KEY: KEY, ...env },
    });
    serves.push(s);
    return s.url;
  };
  const chat = (url: string, stream: boolean) =>
    fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${KEY}`,
        "x-session-id": "ses_tls",
      },
      // A client that asks for usage itself gets the usage chunk too (else the gate asks and hides it).
      body: JSON.stringify({
        model: "m-tls",
        stream,
        ...(stream ? { stream_options: { include_usage: true } } : {}),
        messages: [{ role: "user", content: "hi" }],
      }),
    });

  test("a trusted certificate: JSON and streaming answers pass byte for byte", async () => {
    const url = await serve("trusted", { NODE_EXTRA_CA_CERTS: cert });
    const json = await chat(url, false);
    expect(json.status).toBe(200);
    expect(await json.text()).toBe(ANSWER);
    const sse = await chat(url, true);
    expect(sse.status).toBe(200);
    expect(sse.headers.get("content-type")).toBe("text/event-stream");
    expect(await sse.text()).toBe(STREAM);
    expect(seen).toHaveLength(2);
  }, 60_000);

  test("an untrusted certificate: 502 naming the certificate problem, nothing answered upstream", async () => {
    const before = seen.length;
    const url = await serve("untrusted", {});
    const res = await chat(url, false);
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("upstream_unreachable");
    expect(body.error.message).toMatch(/CERT|certificate/i);
    expect(seen).toHaveLength(before);
  }, 60_000);
});
