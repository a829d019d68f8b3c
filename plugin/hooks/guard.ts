// The one guard every hook runs in: nothing the plugin does may throw into
// opencode or hold its session up on a failure. A throw (or a rejected
// promise) is logged with the hook's code and the hook resolves as if nothing
// happened; opencode never sees it.

/** Runs fn; a throw or rejection is logged under code and becomes undefined. */
export type Guard = <T>(code: string, fn: () => T) => T | undefined;

export function guardFor(log: (level: "error", code: string, message: string) => void): Guard {
  return (code, fn) => {
    try {
      const out = fn();
      if (out instanceof Promise) {
        return out.catch((err: unknown) => {
          log("error", code, String(err));
          return undefined;
        }) as typeof out;
      }
      return out;
    } catch (err) {
      log("error", code, String(err));
      return undefined;
    }
  };
}
