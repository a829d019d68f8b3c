// The store's tables, one repository each, all over one Sql (a connection, or one transaction).
import type { Sql } from "../store/sql.ts";
import { capsTable } from "./tables/caps.ts";
import { countersTable } from "./tables/counters.ts";
import { directivesTable } from "./tables/directives.ts";
import { knobsTable } from "./tables/knobs.ts";
import { marksTable } from "./tables/marks.ts";
import { pluginLinksTable } from "./tables/plugin-links.ts";
import { pluginsTable } from "./tables/plugins.ts";
import { refusalsTable } from "./tables/refusals.ts";
import { refusedSessionsTable } from "./tables/refused-sessions.ts";
import { requestsTable } from "./tables/requests.ts";
import { routerRunsTable } from "./tables/router-runs.ts";
import { samplesTable } from "./tables/samples.ts";
import { sessionsTable } from "./tables/sessions.ts";
import { ticksTable } from "./tables/ticks.ts";
import { transitionsTable } from "./tables/transitions.ts";
import { treeModesTable } from "./tables/tree-modes.ts";

export function openTables(db: Sql) {
  return {
    caps: capsTable(db),
    counters: countersTable(db),
    directives: directivesTable(db),
    knobs: knobsTable(db),
    marks: marksTable(db),
    pluginLinks: pluginLinksTable(db),
    plugins: pluginsTable(db),
    refusals: refusalsTable(db),
    refusedSessions: refusedSessionsTable(db),
    requests: requestsTable(db),
    routerRuns: routerRunsTable(db),
    samples: samplesTable(db),
    sessions: sessionsTable(db),
    ticks: ticksTable(db),
    transitions: transitionsTable(db),
    treeModes: treeModesTable(db),
  };
}
export type Tables = ReturnType<typeof openTables>;
