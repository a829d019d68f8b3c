import { describe, expect, it } from "vitest";
import type { Alert } from "../types.ts";
import { notifySendArgs } from "./desktop.ts";
import { pagerdutyBody } from "./pagerduty.ts";
import { ntfyBody, slackBody } from "./webhook.ts";

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
