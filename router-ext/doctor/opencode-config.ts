// What opencode's config files say about the gate, read the way opencode
// layers them (global, then $OPENCODE_CONFIG, then the project's files, later
// winning per provider): which providers point at the gate's /v1, what their
// apiKey is made of ({env:NAME}, {file:PATH} or a literal), and the model in
// use. Pure: the files come in parsed (gather.ts reads them).
import { isAbsolute, join } from "node:path";

export interface ConfigFileFact {
  path: string;
  /** The parsed JSONC, or why it could not be read. */
  value?: unknown;
  error?: string;
}

export interface ProviderView {
  id: string;
  /** options.baseURL with {env:NAME} filled in; null when absent. */
  baseURL: string | null;
  /** options.apiKey as written; null when absent. */
  apiKey: string | null;
  /** The file that set apiKey (for {file:} paths relative to it), else the last one naming the provider. */
  file: string;
}

export type KeyForm =
  | { kind: "missing" }
  | { kind: "env"; name: string }
  | { kind: "file"; path: string }
  | { kind: "literal" };

const rec = (v: unknown): Record<string, unknown> | null =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;

/** Every {env:NAME} and {file:PATH} a config file names in provider options (gather.ts looks them up). */
export function referencesIn(files: readonly ConfigFileFact[]): {
  env: string[];
  files: Array<[string, string]>;
} {
  const env = new Set<string>();
  const paths: Array<[string, string]> = [];
  for (const f of files)
    for (const p of Object.values(rec(rec(f.value)?.provider) ?? {})) {
      for (const v of Object.values(rec(rec(p)?.options) ?? {})) {
        if (typeof v !== "string") continue;
        for (const m of v.matchAll(/\{env:([^}]+)\}/g)) env.add(m[1] as string);
        for (const m of v.matchAll(/\{file:([^}]+)\}/g)) paths.push([f.path, m[1] as string]);
      }
    }
  return { env: [...env], files: paths };
}

/** A {file:PATH} as opencode resolves it: ~ is the home dir, a relative path is beside the config file. */
export function resolveFileRef(ref: string, configFile: string, home: string): string {
  if (ref.startsWith("~/")) return join(home, ref.slice(2));
  if (isAbsolute(ref)) return ref;
  return join(configFile, "..", ref);
}

function fillEnv(value: string, env: Record<string, string | undefined>): string {
  return value.replace(/\{env:([^}]+)\}/g, (_, name: string) => env[name] ?? "");
}

/** The providers after layering (later files win per option) and the top-level model. */
export function layeredProviders(
  files: readonly ConfigFileFact[],
  env: Record<string, string | undefined>,
): { providers: ProviderView[]; model: string | null } {
  const byId = new Map<string, ProviderView>();
  let model: string | null = null;
  for (const f of files) {
    const top = rec(f.value);
    if (!top) continue;
    if (typeof top.model === "string") model = top.model;
    for (const [id, p] of Object.entries(rec(top.provider) ?? {})) {
      const opts = rec(rec(p)?.options) ?? {};
      const prev = byId.get(id) ?? { id, baseURL: null, apiKey: null, file: f.path };
      byId.set(id, {
        id,
        baseURL: typeof opts.baseURL === "string" ? fillEnv(opts.baseURL, env) : prev.baseURL,
        apiKey: typeof opts.apiKey === "string" ? opts.apiKey : prev.apiKey,
        file: typeof opts.apiKey === "string" || prev.apiKey === null ? f.path : prev.file,
      });
    }
  }
  return { providers: [...byId.values()], model };
}

/** What an apiKey is made of. */
export function keyForm(apiKey: string | null): KeyForm {
  if (apiKey === null || apiKey.trim() === "") return { kind: "missing" };
  const env = /^\{env:([^}]+)\}$/.exec(apiKey.trim());
  if (env) return { kind: "env", name: env[1] as string };
  const file = /^\{file:([^}]+)\}$/.exec(apiKey.trim());
  if (file) return { kind: "file", path: file[1] as string };
  return { kind: "literal" };
}

/** A URL in one comparable form: localhost as 127.0.0.1, no trailing slash; null when not a URL. */
export function sameEndpoint(a: string, b: string): boolean {
  const norm = (u: string) => {
    try {
      const url = new URL(u);
      const host = url.hostname === "localhost" || url.hostname === "[::1]" ? "127.0.0.1" : url.hostname;
      const port = url.port || (url.protocol === "https:" ? "443" : "80");
      return `${url.protocol}//${host}:${port}${url.pathname.replace(/\/+$/, "")}`;
    } catch {
      return null;
    }
  };
  const na = norm(a);
  return na !== null && na === norm(b);
}

/** The first provider whose baseURL is the gate (`gate`: the router URL plus /v1), or null. */
export function gateProvider(
  files: readonly ConfigFileFact[],
  env: Record<string, string | undefined>,
  gate: string,
): ProviderView | null {
  return (
    layeredProviders(files, env).providers.find((p) => p.baseURL !== null && sameEndpoint(p.baseURL, gate)) ??
    null
  );
}
