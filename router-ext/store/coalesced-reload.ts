// A replica reloads what its gate decides on after every change another
// replica made (pg-notify.ts). Reloads never overlap, and the notifications
// that arrive while one runs collapse into ONE more run after it, so a burst
// of changes costs two reloads, not one per change, and the last change is
// always read. A failed reload is logged and retried on the next signal.
export interface CoalescedReload {
  /** Something changed: reload now, or once more after the reload running now. */
  signal(): void;
  /** Resolves when no reload runs or waits. */
  idle(): Promise<void>;
  /** Reloads finished so far. */
  runs(): number;
}

export function coalescedReload(reload: () => Promise<void>, log: (line: string) => void): CoalescedReload {
  let running: Promise<void> | null = null;
  let again = false;
  let runs = 0;
  const start = (): void => {
    running = (async () => {
      do {
        again = false;
        try {
          await reload();
          runs++;
        } catch (err) {
          log(`replica feed: reload failed (${(err as Error).message}); next change retries`);
        }
      } while (again);
      running = null;
    })();
  };
  return {
    signal() {
      if (running) again = true;
      else start();
    },
    idle: async () => {
      while (running) await running;
    },
    runs: () => runs,
  };
}
