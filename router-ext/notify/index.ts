// The notifier: alerts in, per-channel admission, a bounded delivery queue
// (notifier.ts); alerts from transitions (from-transition.ts) and the
// watchdog (from-watchdog.ts); the admin routes (routes.ts).

export { transitionAlert } from "./from-transition.ts";
export { createNotifier, type NotificationsConfig, type NotifierOptions } from "./notifier.ts";
export { notifierRoutes } from "./routes.ts";
export type {
  Alert,
  ChannelDiagnostic,
  ChannelPatch,
  ChannelStatus,
  Delivery,
  Notifier,
  Severity,
} from "./types.ts";
