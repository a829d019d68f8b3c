// A section a module adds to the admin page by itself (the model breaker, the
// client keys): its heading and body element, created once, then refreshed
// on a timer while the page's generation holds (main.ts bumps it on a 401).
import { h } from "./dom.ts";

export interface SectionSpec {
  id: string;
  title: string;
  /** The page view it belongs to (main.ts shows one view's sections at a time). */
  view: string;
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
  const section = h("section", { id: spec.id, "data-view": spec.view }, h("h2", {}, spec.title), body);
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
