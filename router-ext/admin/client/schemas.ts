// What the page reads from the HTTP API: the server's own response schemas
// (router-ext/api/schemas.ts), under the names the views use. Each row is
// parsed on its own so one bad row is reported, not fatal.
export {
  type ChannelView as Channel,
  channelViewSchema as channelSchema,
  type Delivery,
  deliverySchema,
  type EventView as EventRow,
  type ExcludedKnob,
  eventViewSchema as eventSchema,
  type Health,
  healthSchema,
  type KnobKind,
  type KnobView as Knob,
  knobKinds,
  knobsResponseSchema,
  knobViewSchema as knobSchema,
  listIn,
  parseRows,
  type RouterEventView as RouterEventRow,
  type RowsResult,
  routerEventViewSchema as routerEventSchema,
  type SessionView as SessionRow,
  sessionViewSchema as sessionRowSchema,
} from "../../api/schemas.ts";
