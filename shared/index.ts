// The one detection core, and its one door: the plugin, the router extension,
// the watchdog, the calibrator, io/, the benches and the tests outside shared/
// import it from here (the admin page's browser bundle from shared/browser.ts),
// and the linter refuses an import of shared/<file>.ts from outside
// (.ci/biome-config.json). The core is pure: no file, network, process or
// clock access (time comes in as a value); those are the shells' (io/ for the
// code both shells share), and the same config refuses them in shared/'s
// non-test files. Two node modules stay, as computation: node:crypto
// for sha256 (hash.ts) and node:path's posix string arithmetic (tree-credit.ts).
export * from "./adapters/hook.ts";
export * from "./adapters/stored.ts";
export * from "./bash-command.ts";
export * from "./bash-landing.ts";
export * from "./bash-may-write.ts";
export * from "./bounded-map.ts";
export * from "./canonical-json.ts";
export * from "./config.ts";
export * from "./config-layers.ts";
export * from "./cycle.ts";
export * from "./display-text.ts";
export * from "./duration.ts";
export * from "./forest.ts";
export * from "./hash.ts";
export * from "./incident-report.ts";
export * from "./injected.ts";
export * from "./judge.ts";
export * from "./policy.ts";
export * from "./progress-status.ts";
export * from "./read.ts";
export * from "./replay.ts";
export * from "./run-output.ts";
export * from "./session-tracker.ts";
export * from "./sweep.ts";
export * from "./tool-call.ts";
export * from "./tool-kinds.ts";
export * from "./tree-credit.ts";
export * from "./types.ts";
export * from "./wire.ts";
