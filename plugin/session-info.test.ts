import { describe, expect, it } from "vitest";
import { heartbeatSchema } from "../shared/index.ts";
import { type SessionSeen, sessionSeenOf } from "./events.ts";
import { SessionInfos, sessionInfoFrom, shortFolder } from "./session-info.ts";

/** What the event mapping makes of a session.created event with this info. */
const event = (info: Record<string, unknown>) => sessionSeenOf({ sessionID: info.id, info }) as SessionSeen;

describe("session info for the heartbeat", () => {
  it("writes the home folder as ~, and only at a folder boundary", () => {
    expect(shortFolder("/home/ann/proj", "/home/ann")).toBe("~/proj");
    expect(shortFolder("/home/ann", "/home/ann/")).toBe("~");
    expect(shortFolder("/home/anna/proj", "/home/ann")).toBe("/home/anna/proj");
    expect(shortFolder("/srv/x", "/")).toBe("/srv/x");
  });

  it("strips control, bidi and zero-width characters and caps the length", () => {
    const got = sessionInfoFrom(
      event({
        id: "ses_a",
        title: `\u202eevil\u202c title\r\nsecond\u200b line ${"x".repeat(400)}`,
        directory: "/home/ann/p\u0000roj\ud800",
        time: { created: 1234.9 },
      }),
      "/home/ann",
    );
    expect(got.title?.startsWith(" evil")).toBe(false);
    expect(got.title?.startsWith("evil title second line x")).toBe(true);
    expect(got.title?.length).toBeLessThanOrEqual(200);
    expect(got.directory).toBe("~/p roj");
    expect(got.created_at).toBe(1234);
    // What it keeps passes the wire's strict check.
    const hb = {
      type: "heartbeat",
      instance_id: "sg_x_1",
      plugin_version: "0.1.0",
      at: 1,
      sessions: [
        {
          session_id: "ses_a",
          parent_id: null,
          root_id: "ses_a",
          agent: "build",
          verdict: "ok",
          turns: 0,
          turns_since_landed: 0,
          last_landed_at: null,
          context_tokens: 0,
          ...got,
        },
      ],
    };
    expect(heartbeatSchema.safeParse(hb).success).toBe(true);
    const forged = { ...hb, sessions: [{ ...hb.sessions[0], title: "a\u202eb" }] };
    expect(heartbeatSchema.safeParse(forged).success).toBe(false);
  });

  it("keeps what an event lacks from the earlier one; malformed info is ignored", () => {
    const infos = new SessionInfos(16, "/home/ann");
    infos.note(event({ id: "ses_b", title: "first", directory: "/home/ann/p", time: { created: 5 } }));
    infos.note(event({ id: "ses_b", title: "renamed" }));
    expect(infos.get("ses_b")).toEqual({ title: "renamed", directory: "~/p", created_at: 5 });
    expect(sessionSeenOf({ info: { id: 42, title: "x" } })).toBeNull();
    expect(sessionSeenOf(null)).toBeNull();
    infos.note(event({ id: "ses_c", title: 7, directory: ["x"], time: "now" }));
    expect(infos.get("ses_c")).toEqual({ title: null, directory: null, created_at: null });
    infos.forget("ses_b");
    expect(infos.get("ses_b")).toBeUndefined();
  });
});
