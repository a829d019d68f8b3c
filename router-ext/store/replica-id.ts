// Which replica answered: STALLGUARD_REPLICA when set (a name the operator
// chose, e.g. the systemd instance), else hostname:pid. /metrics labels every
// series with it, and an alert claim records it.
const REPLICA = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/;

/**
 * @example
 * replicaId({}, "build-3", 4242) // "build-3:4242"
 * replicaId({ STALLGUARD_REPLICA: "a" }, "build-3", 4242) // "a"
 */
export function replicaId(env: NodeJS.ProcessEnv, hostname: string, pid: number): string {
  const chosen = env.STALLGUARD_REPLICA?.trim();
  if (chosen) {
    if (!REPLICA.test(chosen))
      throw new Error(
        "STALLGUARD_REPLICA must be 1 to 100 of A-Z a-z 0-9 . _ : - (starting with a letter or digit)",
      );
    return chosen;
  }
  const host = hostname.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 80) || "host";
  return `${host}:${pid}`;
}
