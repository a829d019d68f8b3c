// The full stack for end-to-end tests of the plugin with the router: a scripted
// model server, the router extension (its own SQLite file and config.local.yaml
// under a temp dir) with its gate in front of the model, and a real
// `opencode serve` whose provider points at the gate, with the plugin bundle
// (built once by test/e2e/global-setup.ts) reporting to the router.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll } from "vitest";
import { type RunningServer, startServer } from "../../router-ext/server/start.ts";
import { type ModelServer, type Script, startModelServer, type Usage } from "./model-server.ts";
import { type OpencodeServer, startOpencode } from "./opencode.ts";
import { QUIET_LOCAL_YAML } from "./test-router.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const PLUGIN_BUNDLE = join(REPO, "dist", "plugin", "stallguard.js");

export interface PluginStack {
  dir: string;
  model: ModelServer;
  srv: RunningServer;
  oc: OpencodeServer;
  /** Stops the router and starts it again on the same port and database (opencode keeps running). */
  restartRouter(): Promise<RunningServer>;
  close(): Promise<void>;
}

export interface PluginStackOptions {
  tmpPrefix: string;
  /** The router's config.local.yaml (default QUIET_LOCAL_YAML). */
  localYaml?: string;
  script: Script;
  /** The usage the model server reports per response (default 2000 prompt, 10 completion tokens). */
  usage?: Usage;
  adminToken: string;
  pluginToken: string;
  /** The project's files (default: a README) and whether it is a git work tree with a first commit. */
  projectFiles?: Record<string, string>;
  git?: boolean;
}

export async function startPluginStack(opts: PluginStackOptions): Promise<PluginStack> {
  const dir = mkdtempSync(join(tmpdir(), opts.tmpPrefix));
  const configPath = join(dir, "local.yaml");
  writeFileSync(configPath, opts.localYaml ?? QUIET_LOCAL_YAML);
  const model = await startModelServer({
    script: opts.script,
    usage: opts.usage ?? { prompt_tokens: 2000, completion_tokens: 10 },
  });
  const router = (port: number) =>
    startServer({
      port,
      dbPath: join(dir, "stallguard.db"),
      configPath,
      upstream: model.url,
      // The gate's client key is created under this config folder (never the user's own).
      env: {
        STALLGUARD_ADMIN_TOKEN: opts.adminToken,
        STALLGUARD_TOKEN: opts.pluginToken,
        XDG_CONFIG_HOME: join(dir, "config"),
      },
      log: () => {},
    });
  const srv = await router(0);
  const oc = await startOpencode({
    modelUrl: `${srv.url}/v1`,
    apiKey: srv.clientKeys[0]?.key ?? "",
    plugins: [PLUGIN_BUNDLE],
    env: { STALLGUARD_URL: srv.url, STALLGUARD_TOKEN: opts.pluginToken, STALLGUARD_HEARTBEAT_MS: "1000" },
    projectFiles: opts.projectFiles ?? { "README.md": "# scratch\n" },
    git: opts.git ?? false,
  });
  const stack: PluginStack = {
    dir,
    model,
    srv,
    oc,
    async restartRouter() {
      const port = stack.srv.port;
      await stack.srv.close();
      stack.srv = await router(port);
      return stack.srv;
    },
    async close() {
      await stack.oc.stop();
      await stack.srv.close();
      await model.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return stack;
}

/**
 * One stack for a whole test file: started before its tests (then handed to
 * `ready`, which may finish the file's own set-up) and closed after them.
 */
export function pluginStackPerFile(
  opts: PluginStackOptions,
  ready: (stack: PluginStack) => void | Promise<void>,
  cleanup?: () => void,
): void {
  let stack: PluginStack | undefined;
  beforeAll(async () => {
    stack = await startPluginStack(opts);
    await ready(stack);
  }, 120_000);
  afterAll(async () => {
    cleanup?.();
    await stack?.close();
  });
}
