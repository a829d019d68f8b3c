// Schema for the behaviour breaker (router-ext/breaker/). Even versions only.
import type { Migration } from "./migration.ts";

export const BREAKER_MIGRATIONS: readonly Migration[] = [];
