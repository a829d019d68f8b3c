// The opencode plugin entry. opencode calls every export of this module as a
// plugin, so it re-exports exactly one function and nothing else.
export { StallguardPlugin } from "./plugin.ts";
