declare const __STALLGUARD_VERSION__: string | undefined;

/** Set by the esbuild bundle (deploy/build.mjs); "dev" when run from source. */
export const PLUGIN_VERSION: string =
  typeof __STALLGUARD_VERSION__ === "string" ? __STALLGUARD_VERSION__ : "dev";
