declare const __STALLGUARD_VERSION__: string | undefined;

/** Set by the esbuild bundle; "dev" when run from source. */
export const VERSION: string = typeof __STALLGUARD_VERSION__ === "string" ? __STALLGUARD_VERSION__ : "dev";
