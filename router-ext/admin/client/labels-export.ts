// "Export labels": the marks as the labels file `stallguard calibrate --labels`
// reads (GET /api/labels), saved by the browser. Built as a Blob in the page,
// since the token travels in a header and a plain link could not carry it.
import type { Api } from "./api.ts";
import { h } from "./dom.ts";

export async function exportLabels(api: Api): Promise<number> {
  const doc = (await api.get("/api/labels")) as Record<string, unknown> | null;
  const text = `${JSON.stringify(doc ?? {}, null, 2)}\n`;
  const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  const a = h("a", { href: url, download: "stallguard-labels.json" });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return Object.keys(doc ?? {}).length;
}
