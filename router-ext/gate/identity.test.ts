// The gate reads who is asking from headers a client chooses: each one obeys
// the wire's own rule (shared/wire.ts), so what the gate stores for a session
// is what POST /progress would have accepted; anything else counts as absent.
import { describe, expect, it } from "vitest";
import { parseProgressBody } from "../../shared/index.ts";
import { transition } from "../../test/helpers/wire-fixtures.ts";
import { identityFrom } from "./identity.ts";

const agentOf = (value: string) => identityFrom(new Headers({ "x-router-agent": value })).agent;
const wireAccepts = (agent: string) =>
  parseProgressBody(transition("ses_agent_rule", null, agent, "ok", "stalling", 1)).ok;

describe("identity headers follow the wire's rules", () => {
  it("x-router-agent: a slug the wire accepts is kept, anything else is absent", () => {
    for (const good of ["build", "sisyphus-junior", "a_1", "x".repeat(64)]) {
      expect(agentOf(good), good).toBe(good);
      expect(wireAccepts(good), good).toBe(true);
    }
    for (const bad of ["Build", "<script>", "a b", "x".repeat(65), "ag\tent", "plan.v2", "%2e"]) {
      expect(agentOf(bad), bad).toBeNull();
      expect(wireAccepts(bad), bad).toBe(false);
    }
  });

  it("session and parent ids: the wire's id pattern, whichever header carries them", () => {
    const id = (h: Record<string, string>) => identityFrom(new Headers(h));
    expect(id({ "x-session-id": "ses_ok:1.2-3" }).sessionId).toBe("ses_ok:1.2-3");
    expect(id({ "x-session-id": "ses/../x" }).sessionId).toBeNull();
    expect(id({ "x-router-conversation": "ses<b>", "x-session-id": "ses_b" }).sessionId).toBe("ses_b");
    expect(id({ "x-router-parent": "p".repeat(201) }).parent).toBeNull();
  });
});
