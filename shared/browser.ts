// The core's second door, for the admin page's browser bundle
// (router-ext/admin/client/*). shared/index.ts also exports the hashing
// (node:crypto) and the zod schemas, whose top-level calls esbuild keeps even
// when nothing uses them, so the browser gets only these modules: plain
// functions and types with no node import and no schema.
export * from "./duration.ts";
export * from "./session-tree.ts";
export * from "./types.ts";
