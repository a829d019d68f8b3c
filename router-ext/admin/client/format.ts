// Number and time formatting for the admin tables. ASCII only (no locale
// formatting, which can insert non-breaking spaces), so it is pure and testable.

/** 1234567 -> "1,234,567"; null -> "-". */
export function fmtInt(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "-";
  const s = String(Math.round(Math.abs(n)));
  const grouped = s.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return n < 0 ? `-${grouped}` : grouped;
}

/** 1.8412 -> "$1.84"; small amounts keep more digits so a cent-level spend is not "$0.00". */
export function fmtUsd(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "-";
  if (n !== 0 && Math.abs(n) < 0.01) return `$${n.toFixed(4)}`;
  return `$${n.toFixed(2)}`;
}

/** Milliseconds since the epoch from a number (ms, or seconds when small) or an ISO string. */
export function toMs(at: number | string | null | undefined): number | null {
  if (at === null || at === undefined) return null;
  if (typeof at === "number") {
    if (!Number.isFinite(at) || at <= 0) return null;
    return at < 1e11 ? at * 1000 : at;
  }
  const ms = Date.parse(at);
  return Number.isNaN(ms) ? null : ms;
}

const pad = (n: number) => String(n).padStart(2, "0");

/** Local "YYYY-MM-DD HH:MM:SS", or "-". */
export function fmtTime(at: number | string | null | undefined): string {
  const ms = toMs(at);
  if (ms === null) return "-";
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** "12s ago", "5m ago", "3h ago", "2d ago"; "-" when unknown. */
export function fmtAgo(at: number | string | null | undefined, now: number): string {
  const ms = toMs(at);
  if (ms === null) return "-";
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 90) return `${s}s ago`;
  if (s < 90 * 60) return `${Math.round(s / 60)}m ago`;
  if (s < 36 * 3600) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86400)}d ago`;
}
