// A section a module adds to the admin page by itself (the model breaker, the
// client keys): its heading and body element, created once, then refreshed
// on a timer while the page's generation holds (main.ts bumps it on a 401).
import { type Api, ApiError } from "./api.ts";
import { h, replace } from "./dom.ts";

export interface SectionSpec {
  id: string;
  title: string;
  /** The tab it belongs to (main.ts shows one tab's sections at a time). */
  tab: string;
  /** Inserted before this section (when it is on the page), else after `after`, else at the end. */
  before?: string;
  after?: string;
  refreshMs: number;
  load: (root: HTMLElement) => Promise<void>;
}

function sectionBody(spec: SectionSpec): HTMLElement | null {
  const existing = document.getElementById(`${spec.id}-body`);
  if (existing) return existing;
  const app = document.getElementById("app");
  if (!app) return null;
  const body = h("div", { id: `${spec.id}-body` });
  const section = h("section", { id: spec.id, "data-tab": spec.tab }, h("h2", {}, spec.title), body);
  const before = spec.before ? document.getElementById(spec.before) : null;
  const after = spec.after ? document.getElementById(spec.after) : null;
  if (before && before.parentElement === app) app.insertBefore(section, before);
  else if (after && after.parentElement === app) after.after(section);
  else app.appendChild(section);
  return body;
}

/** Adds the section and keeps it fresh while `alive()` holds. */
export function mountSection(spec: SectionSpec, alive: () => boolean): void {
  const root = sectionBody(spec);
  if (!root) return;
  const loop = async () => {
    if (!alive()) return;
    await spec.load(root);
    if (alive()) setTimeout(() => void loop(), spec.refreshMs);
  };
  void loop();
}

/**
 * A section's GET: the answer as an object, or null once the section says why
 * not (nothing on a 401: main.ts asks for the token again).
 */
export async function loadSection(
  api: Api,
  root: HTMLElement,
  path: string,
  label: string,
): Promise<Record<string, unknown> | null> {
  let raw: unknown;
  try {
    raw = await api.get(path, { optional: true });
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return null;
    replace(root, h("div", { class: "err" }, `${label}: ${(err as Error).message}`));
    return null;
  }
  if (raw === null || typeof raw !== "object") {
    replace(root, h("div", { class: "dim" }, `${label}: not available on this server`));
    return null;
  }
  return raw as Record<string, unknown>;
}
