// A trivial OpenAI-compatible upstream for the gate benches, run as its own
// process so it does not share a core with the proxy it serves: a chat
// completion answers JSON with usage, or (stream: true) eight content chunks,
// a finish chunk, the usage chunk when asked and [DONE]. Prints its port.
//
//   node --import tsx bench/bench-upstream.ts
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

const base = { id: "chatcmpl-bench", created: 0, model: "bench" };
const line = (obj: unknown) => `data: ${JSON.stringify(obj)}\n\n`;
const delta = (i: number) =>
  line({
    ...base,
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta: { content: `token ${i} ` }, finish_reason: null }],
  });
const usage = { prompt_tokens: 1000, completion_tokens: 8, total_tokens: 1008 };
// Prepared once: the upstream's own cost stays the same for every target.
const STREAM_HEAD = Array.from({ length: 8 }, (_, i) => delta(i)).join("");
const STREAM_FINISH = line({
  ...base,
  object: "chat.completion.chunk",
  choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
});
const STREAM_USAGE = line({ ...base, object: "chat.completion.chunk", choices: [], usage });
const JSON_ANSWER = JSON.stringify({
  ...base,
  object: "chat.completion",
  choices: [{ index: 0, message: { role: "assistant", content: "bench answer" }, finish_reason: "stop" }],
  usage,
});

const server = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on("data", (c: Buffer) => parts.push(c));
  req.on("end", () => {
    const body = Buffer.concat(parts).toString("latin1");
    if (!/"stream"\s*:\s*true/.test(body)) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON_ANSWER);
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    // The first chunk alone, then the rest: time to first byte is the first chunk's.
    res.write(STREAM_HEAD);
    res.write(STREAM_FINISH);
    if (/"include_usage"\s*:\s*true/.test(body)) res.write(STREAM_USAGE);
    res.end("data: [DONE]\n\n");
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
