import { defineCommand } from "citty";

export default defineCommand({
  meta: { name: "install-plugin", description: "not built yet" },
  run() {
    console.error("stallguard install-plugin: not built yet");
    process.exitCode = 2;
  },
});
