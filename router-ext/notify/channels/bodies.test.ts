import { describe, expect, it } from "vitest";
import type { Alert } from "../types.ts";
import { notifySendArgs } from "./desktop.ts";
import { pagerdutyBody } from "./pagerduty.ts";
import { jsonBody, ntfyBody, slackBody } from "./webhook.ts";

const alert = (over: Partial<Alert> = {}): Alert => ({
  dedup_key: "root",
  severity: "critical",
  state: "trigger",
  title: "T",
  summary: "S",
  details: "",
  source: "watchdog",
  at: 0,
  ...over,
});

describe("channel bodies", () => {
  const desktop = { name: "d", type: "desktop", command: "notify-send", app_name: "sg" } as const;
  it.each([
    ["critical", "trigger", "critical"],
    ["critical", "escalate", "critical"],
    ["warning", "trigger", "normal"],
    ["info", "trigger", "normal"],
    ["critical", "resolve", "normal"],
  ] as const)("notify-send urgency for %s %s is %s", (severity, state, urgency) => {
    const args = notifySendArgs(
      {
        ...desktop,
        enabled: true,
        min_severity: "info",
        resolve_messages: true,
        rate_limit: { count: 1, per: 1 },
        quiet_window: 0,
      },
      alert({ severity, state }),
    );
    expect(args).toEqual(["-a", "sg", "-u", urgency, "--", "T", "S"]);
  });

  it("maps escalate to a critical PagerDuty trigger", () => {
    const b = pagerdutyBody(alert({ state: "escalate", severity: "warning" }), "k");
    expect(b).toMatchObject({
      event_action: "trigger",
      payload: { severity: "critical", source: "stallguard/watchdog" },
    });
  });

  it("ntfy resolves get normal priority and a check mark; slack omits an empty details block", () => {
    expect(ntfyBody(alert({ state: "resolve" }), "t")).toMatchObject({
      priority: 3,
      tags: ["white_check_mark", "watchdog"],
      message: "S",
    });
    expect(slackBody(alert())).toEqual({ text: "*T*\nS" });
    expect(ntfyBody(alert({ details: "x".repeat(5000) }), "t").message).toHaveLength(3500);
  });
});

describe("free text from /progress in every channel", () => {
  const forged = alert({
    title: "stallguard: build is looping",
    summary: "build session ses_a looping: <!channel> <http://evil.example|click> & \u202egnp.exe\u0000",
    details: "report ``` <!here> <@U123> line\u2028two \ud800 end",
  });
  const desktopCfg = {
    name: "d",
    type: "desktop",
    command: "notify-send",
    app_name: "sg",
    enabled: true,
    min_severity: "info",
    resolve_messages: true,
    rate_limit: { count: 1, per: 1 },
    quiet_window: 0,
  } as const;

  it("Slack: mentions and links are shown as text, the code block cannot be closed", () => {
    const { text } = slackBody(forged);
    expect(text).not.toMatch(/<!channel>|<!here>|<@U123>|<http/);
    expect(text).toContain("&lt;!channel&gt;");
    expect(text).toContain("&amp;");
    expect(text.match(/```/g)).toHaveLength(2);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: asserting control characters are gone
    expect(text).not.toMatch(/[\u0000\u202e\u2028\ud800]/);
  });

  it("ntfy, PagerDuty and the generic webhook carry no control, bidi or lone-surrogate characters", () => {
    const bodies = [ntfyBody(forged, "t"), pagerdutyBody(forged, "k"), jsonBody(forged)];
    for (const b of bodies)
      expect(JSON.stringify(b)).not.toMatch(/\\u0000|\\u202e|\\u2028|\\ud800|\u202e|\u2028/);
    expect(ntfyBody(forged, "t").message).toContain("<!channel>"); // plain text there, shown as it is
  });

  it("desktop: the summary is escaped body markup, and no NUL can make notify-send fail", () => {
    const args = notifySendArgs(desktopCfg, forged);
    const body = args[args.length - 1] ?? "";
    expect(body).toContain("&lt;http://evil.example|click&gt;");
    // biome-ignore lint/suspicious/noControlCharactersInRegex: asserting control characters are gone
    expect(args.join(" ")).not.toMatch(/[\u0000\u202e]/);
  });
});
