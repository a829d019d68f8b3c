// The watchdog: an independent, scheduled sensor for sessions without a
// plugin. It reads opencode's own database (every local session) and any
// opencode servers it is told about, judges with the shared core and reports
// verdict changes to the router extension (source: watchdog).
export { type DbSeen, type DbState, readDbSource } from "./db-source.ts";
export { buildDigest, type DigestCall, type DigestInput } from "./digest.ts";
export { discover, type Seen } from "./discover.ts";
export { acquireLock, type Lock } from "./lock.ts";
export {
  startWatchdogLoop,
  TIMER_UNIT,
  timerInstalled,
  userUnitDir,
  type WatchdogLoop,
  type WatchdogLoopOptions,
} from "./loop.ts";
export { askSecondOpinion, parseOpinion, type SecondOpinion } from "./ollama.ts";
export { type RouterStatus, replayTick, replayTree, settleTick } from "./replay-trees.ts";
export { collectServers, rcServersPath, readRcServers, serversFromRegistry } from "./servers.ts";
export { defaultStatePath, loadState, saveState, type WatchdogState } from "./state.ts";
export { runWatchdogTick, type WatchdogTickOptions, type WatchdogTickResult } from "./tick.ts";
export { type TickRunner, type TickThread, tickThread } from "./tick-thread.ts";
