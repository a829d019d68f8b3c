import type { Config } from "../../shared/index.ts";
import type { Usage } from "./usage.ts";

export type Prices = Config["prices"];
type Price = Prices[string];

/**
 * The price entry for a model: the exact name first, then without a provider
 * prefix ("openrouter/anthropic/claude-x" -> "anthropic/claude-x" -> "claude-x").
 */
export function priceFor(prices: Prices, model: string | null): Price | null {
  if (!model) return null;
  let name = model;
  for (;;) {
    const hit = Object.hasOwn(prices, name) ? prices[name] : undefined;
    if (hit) return hit;
    const slash = name.indexOf("/");
    if (slash < 0) return null;
    name = name.slice(slash + 1);
  }
}

/**
 * Dollars for one request. Prices are dollars per million tokens. Cached
 * prompt tokens are billed at the cached price when one is given, otherwise at
 * the prompt price. null when the model has no price.
 */
export function costUsd(prices: Prices, model: string | null, usage: Usage): number | null {
  const price = priceFor(prices, model);
  if (!price) return null;
  const cached = Math.min(usage.cached_tokens ?? 0, usage.prompt_tokens);
  const fresh = usage.prompt_tokens - cached;
  const cachedRate = price.cached ?? price.prompt;
  const micro = fresh * price.prompt + cached * cachedRate + usage.completion_tokens * price.completion;
  return micro / 1_000_000;
}
