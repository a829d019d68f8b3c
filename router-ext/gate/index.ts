/**
 * The gate: an OpenAI-compatible reverse proxy in front of the model endpoint.
 *
 * - `/v1/<rest>` goes to `<upstream>/<rest>` (the upstream base ends in /v1),
 *   served on node:http in front of the app (mount.ts, proxy.ts).
 * - A refused session (or tree) is answered locally and never forwarded; the
 *   decision is modes/gate-decision.ts over the store's facts in memory.
 * - Streaming answers pass through chunk by chunk; a line scanner reads only
 *   the usage chunk. Non-streaming JSON is scanned once for its usage. No
 *   request or response body is stored or logged: only counts, money, timings.
 * - Where a streaming request did not ask for usage, the gate asks for it
 *   (stream_options.include_usage) and removes the extra usage-only chunk from
 *   what the client sees, so the client gets exactly the stream it asked for.
 */
export { contextCapBody, type ErrorBody, errorBody, refusalBody } from "./answers.ts";
export { type GateFactChange, GateFacts, type GateFactsSnapshot } from "./facts.ts";
export { forwardRequestHeaders, forwardResponseHeaders } from "./headers.ts";
export { identityFrom } from "./identity.ts";
export { createGateMetrics, type GateMetrics, type UpstreamErrorKind } from "./metrics.ts";
export { gateFirst, gateFirstServer, isGatePath } from "./mount.ts";
export { costUsd, priceFor } from "./pricing.ts";
export { type GateOptions, gateProxy, type NodeHandler } from "./proxy.ts";
export { gateRoutes } from "./routes.ts";
export { MAX_SCAN_BYTES } from "./scanners.ts";
export type { GateDecision, GateIdentity, GateStore, RequestRecord } from "./types.ts";
