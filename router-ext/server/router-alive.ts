// The router's own heartbeat, so an outage is on record when it comes back:
// on start it stores this run (and, when an earlier run ended, the time the
// router was down as an event the readout shows), then moves the run's alive
// mark every `intervalMs` while it serves, and marks a clean stop on close.
// A crash, kill or power loss leaves the last alive mark as the start of the
// outage (at most one interval early). Writes go through the store's write
// queue, so a write lock held elsewhere delays a mark, never the server.
import { formatSpan } from "../../shared/index.ts";
import type { RouterStore } from "../store/router-store.ts";

/** How often a serving router moves its alive mark (doctor counts a replica alive within 3 of these). */
export const ALIVE_INTERVAL_MS = 15_000;

export interface AliveMarks {
  stop(): Promise<void>;
}

export function startAliveMarks(o: {
  store: RouterStore;
  now: () => number;
  version: string;
  log: (line: string) => void;
  intervalMs?: number;
}): AliveMarks {
  let seq: number | null = null;
  // A database that takes no writes (read-only file, full disk) loses the marks, not the server.
  const write = (label: string, fn: () => Promise<void>) =>
    fn().catch((err) => o.log(`${label}: not recorded: ${(err as Error).message}`));
  // Awaited by stop(): a stop soon after the start still finds this run's row.
  const started = write("router run", () =>
    o.store.routerStarted(o.now(), process.pid, o.version, (started) => {
      seq = started.seq;
      const down = started.outage;
      if (down)
        o.log(
          `router was down from ${new Date(down.from).toISOString()} to ${new Date(down.to).toISOString()} (${formatSpan(down.to - down.from)}, ${down.clean ? "stopped" : "ended without stopping"}); agents through the gate could not reach their model meanwhile`,
        );
    }),
  );
  const mark = () => {
    if (seq !== null) void write("router alive", () => o.store.routerAlive(seq as number, o.now()));
  };
  const timer = setInterval(mark, o.intervalMs ?? ALIVE_INTERVAL_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await started;
      if (seq !== null) await write("router stop", () => o.store.routerStopped(seq as number, o.now()));
    },
  };
}
