import { describe, expect, it } from "vitest";
import { stallTransition } from "../../router-ext/breaker/testing.ts";
import { artifact, expectNumbersUnderHeaders, type Json, useAdminEnv } from "../helpers/admin-browser.ts";

const TOKEN = "breaker-admin-e2e-token-0123";
const LOOPY = "lab/loopy";
const STEADY = "lab/steady";

describe("admin page: model breaker (real Chromium, real server)", () => {
  const env = useAdminEnv(TOKEN, "watchdog:\n  enabled: false\n", {
    reply: "ok",
    viewport: { width: 1600, height: 1000 },
  });

  const api = env.api;

  const chat = async (m: string, session: string) => {
    const { res } = await env.chat({ "x-router-conversation": session }, m);
    expect(res.status).toBe(200);
    return res.headers.get("x-stallguard-breaker");
  };

  it("shows the trip with its evidence, edits the fallbacks knob, and Resume closes it", async () => {
    // Four trees on each model; three of lab/loopy's loop. No fallback yet: advisory.
    for (let i = 0; i < 4; i++) {
      await chat(LOOPY, `ses_ba_l${i}`);
      await chat(STEADY, `ses_ba_s${i}`);
    }
    for (let i = 0; i < 3; i++) await api("POST", "/progress", stallTransition(`ses_ba_l${i}`, Date.now()));
    const state: Json = await api("GET", "/api/breaker");
    expect(state.trips).toHaveLength(1);
    expect(state.trips[0]).toMatchObject({ model: LOOPY, fallback: null, stalled_trees: 3, served_trees: 4 });

    const page = await env.openPage(`#view=activity&token=${TOKEN}`);
    const section = page.locator("section#breaker");
    const row = section.locator(`tr[data-model="${LOOPY}"]`);
    await row.waitFor();
    expect(await section.locator("h2").textContent()).toBe("Model breaker");
    expect(await row.getAttribute("data-phase")).toBe("open");
    expect(await section.locator(`tr[data-model="${STEADY}"]`).getAttribute("data-phase")).toBe("closed");
    const trip = section.locator(`tr[data-trip-model="${LOOPY}"]`);
    expect(await trip.count()).toBe(1);
    expect(await trip.locator('[data-field="trees"]').textContent()).toBe("3/4");
    expect(await trip.locator('[data-field="rate"]').textContent()).toBe("0.75");
    expect(await trip.locator('[data-field="window"]').textContent()).toBe("1h, min 3, ratio 3");
    expect(await trip.textContent()).toContain("none (advisory)");
    const evidence = trip.locator("li[data-evidence-session]");
    expect(
      (await evidence.evaluateAll((els) => els.map((e) => e.getAttribute("data-evidence-session")))).sort(),
    ).toEqual(["ses_ba_l0", "ses_ba_l1", "ses_ba_l2"]);
    expect(await evidence.first().textContent()).toContain("looping");
    // Advisory: the gate leaves lab/loopy's traffic alone.
    expect(await chat(LOOPY, "ses_ba_probe")).toBeNull();

    // The breaker knobs have controls (on the Knobs page); the fallbacks record is edited as JSON.
    await page.locator('a[data-nav="knobs"]').click();
    for (const k of ["min_sessions", "window", "rate_ratio", "cooldown", "fallbacks"])
      await page.locator(`[data-knob="breaker.${k}"]`).waitFor();
    const fallbacks = page.locator('[data-knob="breaker.fallbacks"] textarea');
    await fallbacks.fill(JSON.stringify({ "lab/": "lab/fallback" }));
    await fallbacks.press("Tab");
    await expect
      .poll(() => page.locator('[data-knob="breaker.fallbacks"] .knob-status').textContent())
      .toBe("saved");
    const before = env.model.requests.length;
    expect(await chat(LOOPY, "ses_ba_routed")).toBe(`${LOOPY} -> lab/fallback`);
    expect(env.model.requests[before]?.body.model).toBe("lab/fallback");
    await page.locator('a[data-nav="activity"]').click();
    await expect.poll(() => row.locator("td").nth(3).textContent(), { timeout: 10_000 }).toBe("lab/fallback");
    // The numbers sit under their headers, right-aligned with them.
    await expectNumbersUnderHeaders(page, "section#breaker table.breaker-models", [
      "trips",
      "stalled/served trees",
      "rate",
      "others",
      "ratio",
    ]);
    await expectNumbersUnderHeaders(page, "section#breaker table.breaker-trips", [
      "stalled/served",
      "rate",
      "others",
      "ratio",
    ]);
    await section.screenshot({ path: artifact("admin-breaker.png") });

    await row.locator('button[data-action="breaker-resume"]').click();
    await section.locator(`tr[data-model="${LOOPY}"][data-phase="closed"]`).waitFor();
    const after: Json = await api("GET", "/api/breaker");
    expect(after.models.find((m: Json) => m.model === LOOPY)).toMatchObject({
      phase: "closed",
      resumed_by: "admin",
    });
    expect(await chat(LOOPY, "ses_ba_after")).toBeNull();
    // The trip stays on record for review.
    expect(await section.locator(`tr[data-trip-model="${LOOPY}"]`).count()).toBe(1);
    await page.close();
    expect(env.problems).toEqual([]);
  });
});
