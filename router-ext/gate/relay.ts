// The upstream's answer on its way down: passed on chunk by chunk through a
// usage scanner, cut after `idleMs` of silence, and ended exactly once with
// how it ended (complete, failed halfway, or the client went away) and how
// many bytes reached the client, so a broken stream is never recorded as a
// success.

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
  /** The error's code (for the log line), when it failed. */
  code: string | null;
}

export function relayBody(
  source: ReadableStream<Uint8Array>,
  scanner: Scanner,
  opts: {
    idleMs: number;
    abortUpstream: () => void;
    onEnd: (end: RelayEnd) => void;
    code: (err: unknown) => string;
  },
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let bytes = 0;
  let ended = false;
  let idled = false;
  let idleTimer: ReturnType<typeof setTimeout> | undefined;
  const end = (error: RelayError | null, code: string | null = null) => {
    if (ended) return;
    ended = true;
    clearTimeout(idleTimer);
    opts.onEnd({ error, bytes, code });
  };
  const armIdle = () => {
    clearTimeout(idleTimer);
    idleTimer = setTimeout(() => {
      idled = true;
      opts.abortUpstream();
    }, opts.idleMs);
  };
  armIdle();
  return new ReadableStream<Uint8Array>({
    async pull(ctrl) {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) {
            const tail = scanner.end();
            if (tail) {
              bytes += tail.byteLength;
              ctrl.enqueue(tail);
            }
            ctrl.close();
            end(null);
            return;
          }
          armIdle();
          const out = scanner.chunk(value);
          if (out && out.byteLength > 0) {
            bytes += out.byteLength;
            ctrl.enqueue(out);
            return;
          }
        }
      } catch (err) {
        end(idled ? "idle_timeout" : "upstream_stream", opts.code(err));
        ctrl.error(err);
      }
    },
    cancel(reason) {
      // The client went away: stop reading upstream (the upstream sees its socket close).
      end("client_abort");
      opts.abortUpstream();
      reader.cancel(reason).catch(() => {});
    },
  });
}
