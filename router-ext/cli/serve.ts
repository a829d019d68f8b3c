import { defineCommand } from "citty";

export default defineCommand({
  meta: { name: "serve", description: "not built yet" },
  run() {
    console.error("stallguard serve: not built yet");
    process.exitCode = 2;
  },
});
