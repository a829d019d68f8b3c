// Schema for the recovery modes (auto_compact, auto_limit_context, auto_recover). Odd versions from 3.
import type { Migration } from "./migration.ts";

export const MODES_MIGRATIONS: readonly Migration[] = [];
