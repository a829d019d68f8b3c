// What the page reads from the HTTP API: the server's own response schemas
// (router-ext/api/schemas.ts), under their own names. Each row is
// parsed on its own so one bad row is reported, not fatal.
export {
  type ChannelView,
  channelViewSchema,
  type Delivery,
  deliverySchema,
  type EventView,
  type ExcludedKnob,
  eventViewSchema,
  type Health,
  healthSchema,
  type KnobKind,
  type KnobView,
  knobKinds,
  knobsResponseSchema,
  knobViewSchema,
  listIn,
  parseRows,
  type RouterEventView,
  type RowsResult,
  routerEventViewSchema,
  type SessionView,
  sessionViewSchema,
} from "../../api/schemas.ts";
