import { describe, expect, it } from "vitest";
import { replicaId } from "./replica-id.ts";

describe("replicaId", () => {
  it("is STALLGUARD_REPLICA when set, else hostname:pid", () => {
    expect(replicaId({ STALLGUARD_REPLICA: "eu-1" }, "h", 1)).toBe("eu-1");
    expect(replicaId({}, "build-3.internal", 4242)).toBe("build-3.internal:4242");
    expect(replicaId({ STALLGUARD_REPLICA: " " }, "h", 7)).toBe("h:7");
  });

  it("refuses a chosen id that would break a metrics label, and tames a strange hostname", () => {
    expect(() => replicaId({ STALLGUARD_REPLICA: 'a"b' }, "h", 1)).toThrow(/STALLGUARD_REPLICA/);
    expect(replicaId({}, 'we"ird host', 2)).toBe("we_ird_host:2");
  });
});
