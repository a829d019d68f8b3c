// The one detection core. The plugin, the router extension, the watchdog and
// the calibrator all import it from here; none of them has its own copy.
export * from "./adapters/hook.ts";
export * from "./adapters/stored.ts";
export * from "./config.ts";
export * from "./cycle.ts";
export * from "./duration.ts";
export * from "./forest.ts";
export * from "./hash.ts";
export * from "./incident-report.ts";
export * from "./injected.ts";
export * from "./judge.ts";
export * from "./policy.ts";
export * from "./replay.ts";
export * from "./session-tracker.ts";
export * from "./sweep.ts";
export * from "./tool-call.ts";
export * from "./types.ts";
export * from "./wire.ts";
