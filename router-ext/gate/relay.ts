// The upstream's answer on its way down: passed on chunk by chunk through a
// usage scanner (the client's socket sets the pace: the upstream is read no
// faster), and ended exactly once with how it ended (complete, failed
// halfway, went silent, or the client went away) and how many bytes reached
// the client, so a broken stream is never recorded as a success. Silence is
// the upstream's body timeout (upstream.ts), which ends the call with an error.
import type { ServerResponse } from "node:http";
import type { UpstreamCall } from "./upstream.ts";

export interface Scanner {
  chunk(bytes: Uint8Array): Uint8Array | null;
  end(): Uint8Array | null;
}

/** How a relayed body ended: null when complete. */
export type RelayError = "upstream_stream" | "idle_timeout" | "client_abort";

export interface RelayEnd {
  error: RelayError | null;
  /** Bytes passed on to the client. */
  bytes: number;
  /** The error's code (for the log line), when the upstream failed. */
  code: string | null;
}

export function relayResponse(
  from: UpstreamCall,
  to: ServerResponse,
  scanner: Scanner,
  opts: { code: (err: unknown) => string; onEnd: (end: RelayEnd) => void },
): void {
  let bytes = 0;
  let ended = false;
  const end = (error: RelayError | null, code: string | null = null) => {
    if (ended) return;
    ended = true;
    to.off("drain", onDrain);
    to.off("close", onClientGone);
    opts.onEnd({ error, bytes, code });
  };
  const send = (out: Uint8Array | null): boolean => {
    if (!out || out.byteLength === 0) return true;
    if (to.destroyed) return false; // the client's close event follows and ends the relay
    bytes += out.byteLength;
    return to.write(out);
  };
  const onDrain = () => from.resume();
  const onClientGone = () => {
    if (to.writableFinished) return;
    // The client went away: stop reading upstream (the upstream sees its socket close).
    end("client_abort");
    from.abort();
  };
  to.on("drain", onDrain);
  to.on("close", onClientGone);
  from.relay({
    data: (chunk) => send(scanner.chunk(chunk)),
    end: () => {
      send(scanner.end());
      to.end();
      end(null);
    },
    error: (err) => {
      end(from.timedOut() ? "idle_timeout" : "upstream_stream", opts.code(err));
      // The client must see a broken answer, not a short one that looks complete.
      to.destroy();
    },
  });
}
