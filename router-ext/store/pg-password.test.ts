import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pgPassword } from "./pg-password.ts";

const dir = mkdtempSync(join(tmpdir(), "sg-pgpass-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string, mode: number): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  chmodSync(p, mode);
  return p;
}

describe("pgPassword: from the environment or a 0600 file, never the URL", () => {
  it("takes STALLGUARD_PG_PASSWORD, or nothing when neither is set", () => {
    expect(pgPassword({ STALLGUARD_PG_PASSWORD: " s3cret\n" })).toBe("s3cret");
    expect(pgPassword({})).toBeUndefined();
  });

  it("reads a 0600 file and refuses one others may read, without showing the value", () => {
    expect(pgPassword({ STALLGUARD_PG_PASSWORD_FILE: file("ok", "fromfile\n", 0o600) })).toBe("fromfile");
    const open = file("open", "leaky", 0o644);
    expect(() => pgPassword({ STALLGUARD_PG_PASSWORD_FILE: open })).toThrow(/mode 644\): chmod 600/);
    try {
      pgPassword({ STALLGUARD_PG_PASSWORD_FILE: open });
    } catch (err) {
      expect((err as Error).message).not.toContain("leaky");
    }
  });

  it("refuses a missing file, a link, a relative path, both variables, and a value with spaces", () => {
    expect(() => pgPassword({ STALLGUARD_PG_PASSWORD_FILE: join(dir, "none") })).toThrow(/does not exist/);
    const link = join(dir, "link");
    symlinkSync(file("target", "x", 0o600), link);
    expect(() => pgPassword({ STALLGUARD_PG_PASSWORD_FILE: link })).toThrow(/symbolic link/);
    expect(() => pgPassword({ STALLGUARD_PG_PASSWORD_FILE: "pw.txt" })).toThrow(/absolute/);
    expect(() => pgPassword({ STALLGUARD_PG_PASSWORD: "a", STALLGUARD_PG_PASSWORD_FILE: "/x" })).toThrow(
      /not both/,
    );
    expect(() => pgPassword({ STALLGUARD_PG_PASSWORD: "two words" })).toThrow(/printable ASCII/);
  });
});
