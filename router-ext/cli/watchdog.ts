import { defineCommand } from "citty";

export default defineCommand({
  meta: { name: "watchdog", description: "not built yet" },
  run() {
    console.error("stallguard watchdog: not built yet");
    process.exitCode = 2;
  },
});
