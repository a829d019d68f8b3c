import { defineCommand } from "citty";

export default defineCommand({
  meta: { name: "calibrate", description: "not built yet" },
  run() {
    console.error("stallguard calibrate: not built yet");
    process.exitCode = 2;
  },
});
