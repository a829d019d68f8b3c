// The notifier panel: per channel an enabled toggle, a min_severity select and
// a Send test alert button; and the recent deliveries, failures first in colour.
import type { Api } from "./api.ts";
import { button, dataTable, h, problemList, replace } from "./dom.ts";
import { fmtAgo, fmtTime } from "./format.ts";
import type { ChannelView, Delivery } from "./schemas.ts";

const SEVERITIES = ["info", "warning", "critical"];

function channelRow(
  ch: ChannelView,
  api: Api,
  reload: () => Promise<void>,
  onSent: () => Promise<void>,
): HTMLTableRowElement {
  const path = `/api/channels/${encodeURIComponent(ch.name)}`;
  const result = h("span", { class: "chan-result", role: "status" });
  const patch = async (body: Record<string, unknown>) => {
    result.textContent = "saving";
    result.className = "chan-result";
    try {
      await api.send("PATCH", path, body);
      result.textContent = "saved";
    } catch (err) {
      result.textContent = (err as Error).message;
      result.className = "chan-result err";
    }
    await reload();
  };
  const enabled = h("input", { type: "checkbox", "aria-label": `${ch.name} enabled` });
  enabled.checked = ch.enabled;
  enabled.addEventListener("change", () => void patch({ enabled: enabled.checked }));
  const options = SEVERITIES.includes(ch.min_severity) ? SEVERITIES : [ch.min_severity, ...SEVERITIES];
  const severity = h(
    "select",
    { "aria-label": `${ch.name} min_severity` },
    ...options.map((s) => h("option", { value: s }, s)),
  );
  severity.value = ch.min_severity;
  severity.addEventListener("change", () => void patch({ min_severity: severity.value }));
  const test = button("Send test alert", async () => {
    result.textContent = "sending";
    result.className = "chan-result";
    try {
      await api.send("POST", `${path}/test`, {});
      result.textContent = "sent";
    } catch (err) {
      result.textContent = (err as Error).message;
      result.className = "chan-result err";
    }
    await onSent();
  });
  return h(
    "tr",
    { "data-channel": ch.name },
    h("td", {}, ch.name, ...ch.problems.map((p) => h("div", { class: "err channel-problem" }, p))),
    h("td", {}, ch.type, ch.target ? h("div", { class: "dim" }, ch.target) : null),
    h("td", {}, enabled),
    h("td", {}, severity),
    h("td", {}, test, " ", result),
  );
}

export function renderChannels(
  root: HTMLElement,
  channels: ChannelView[] | null,
  problems: string[],
  api: Api,
  reload: () => Promise<void>,
  onSent: () => Promise<void>,
): void {
  if (channels === null) {
    replace(root, h("div", { class: "dim" }, "notifier not available on this router"));
    return;
  }
  replace(
    root,
    problemList(problems),
    dataTable(
      "channels",
      ["channel", "type", "enabled", "min_severity", "test"],
      channels.map((c) => channelRow(c, api, reload, onSent)),
      "no channels configured",
    ),
  );
}

function deliveryFailed(d: Delivery): boolean {
  return d.status === "failed" || (d.status !== "dropped" && (d.ok === false || d.error !== null));
}

export function renderDeliveries(
  root: HTMLElement,
  deliveries: Delivery[] | null,
  problems: string[],
  now: number,
): void {
  if (deliveries === null) {
    replace(root, h("div", { class: "dim" }, "notifier not available on this router"));
    return;
  }
  const failures = deliveries.filter(deliveryFailed).length;
  replace(
    root,
    h(
      "div",
      { class: failures ? "summary err" : "summary dim" },
      `${deliveries.length} recent, ${failures} failed`,
    ),
    problemList(problems),
    dataTable(
      "deliveries",
      ["when", "channel", "severity", "state", "result", "title"],
      deliveries.map((d) => {
        const failed = deliveryFailed(d);
        return h(
          "tr",
          { class: failed ? "failed" : "" },
          h("td", { title: fmtTime(d.at) }, fmtAgo(d.at, now)),
          h("td", {}, d.channel ?? "-"),
          h("td", {}, d.severity ?? "-"),
          h("td", {}, d.state ?? "-"),
          h(
            "td",
            { class: failed ? "err" : "" },
            `${failed ? "failed" : (d.status ?? "ok")}${d.error ? `: ${d.error}` : ""}`,
            d.attempts !== null && d.attempts > 1 ? ` (${d.attempts} attempts)` : "",
          ),
          h("td", { class: d.status === "dropped" ? "warn" : "" }, d.title ?? d.dedup_key ?? "-"),
        );
      }),
      "no deliveries yet",
    ),
  );
}
