// Renamed to actions.ts (what a verdict change does, per mode); "policy" is the core's word (shared/policy.ts).
/** @deprecated kept until the store rewrite lands: router-ext/db/tables/tree-modes.ts imports it from here. */
export { parseTreeState, type TreeModeState } from "./actions.ts";
