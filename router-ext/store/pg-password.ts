// Where the PostgreSQL password comes from: STALLGUARD_PG_PASSWORD, or the
// file STALLGUARD_PG_PASSWORD_FILE names, which must be 0600 (read without
// following a link, io/secret-files.ts). Never from the URL or
// a config file (pg-target.ts refuses one there). Neither set: no password
// (a server that trusts this host or uses a client certificate).
import { openSecretFile, SECRET_RULE, secretValue } from "../../io/secret-files.ts";

export class PgPasswordError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PgPasswordError";
  }
}

/** The password, undefined when none is configured, or a PgPasswordError saying what to fix (never the value). */
export function pgPassword(env: NodeJS.ProcessEnv): string | undefined {
  const inline = env.STALLGUARD_PG_PASSWORD;
  const file = env.STALLGUARD_PG_PASSWORD_FILE;
  if (inline !== undefined && file !== undefined)
    throw new PgPasswordError("set STALLGUARD_PG_PASSWORD or STALLGUARD_PG_PASSWORD_FILE, not both");
  if (inline !== undefined) {
    const v = secretValue(inline);
    if (v === null) throw new PgPasswordError(`STALLGUARD_PG_PASSWORD must be ${SECRET_RULE}`);
    return v;
  }
  if (file === undefined) return undefined;
  if (!file.startsWith("/"))
    throw new PgPasswordError("STALLGUARD_PG_PASSWORD_FILE must be an absolute path");
  const f = openSecretFile(file, false);
  if (f.kind === "missing") throw new PgPasswordError(`STALLGUARD_PG_PASSWORD_FILE: ${file} does not exist`);
  if (f.kind === "bad") throw new PgPasswordError(`STALLGUARD_PG_PASSWORD_FILE: ${f.problem}`);
  if ((f.mode & 0o077) !== 0)
    throw new PgPasswordError(
      `STALLGUARD_PG_PASSWORD_FILE: ${file} may be read by others (mode ${f.mode.toString(8)}): chmod 600 it`,
    );
  return f.value;
}
