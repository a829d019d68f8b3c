import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const root = fileURLToPath(new URL("..", import.meta.url));

// Two projects: fast unit tests beside the source, and end-to-end suites in
// test/e2e that start real processes (opencode, the router, Chromium).
export default defineConfig({
  test: {
    root,
    projects: [
      {
        test: {
          name: "unit",
          root,
          include: [
            "shared/**/*.test.ts",
            "io/**/*.test.ts",
            "plugin/**/*.test.ts",
            "router-ext/**/*.test.ts",
            "test/unit/**/*.test.ts",
          ],
        },
      },
      {
        test: {
          name: "e2e",
          root,
          include: ["test/e2e/**/*.test.ts"],
          globalSetup: ["test/e2e/global-setup.ts"],
          testTimeout: 240_000,
          hookTimeout: 240_000,
          fileParallelism: true,
          maxWorkers: 2,
          // Runs after the unit project; vitest 4 needs distinct groups for distinct maxWorkers.
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
