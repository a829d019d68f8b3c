// The admin token arrives in the URL fragment (#token=...), which browsers
// never send to a server, and is then kept in IndexedDB via idb-keyval so a
// bookmark of plain /admin works. View preferences live beside it.
import { del, get, set } from "idb-keyval";

const TOKEN_KEY = "stallguard.admin.token";
const PREFS_KEY = "stallguard.admin.prefs";

export interface Prefs {
  autoRefresh: boolean;
  hideOk: boolean;
}
export const DEFAULT_PREFS: Prefs = { autoRefresh: true, hideOk: false };

/** The token in a fragment such as "#token=abc" or "#view=x&token=abc", or null. */
export function tokenFromFragment(hash: string): string | null {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  const t = params.get("token")?.trim();
  return t ? t : null;
}

/** The fragment with the token removed ("" when nothing else is left). */
export function fragmentWithoutToken(hash: string): string {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  params.delete("token");
  const rest = params.toString();
  return rest ? `#${rest}` : "";
}

/** IndexedDB can be unavailable (some private modes): the page then works for this tab only. */
async function quiet<T>(op: Promise<T>, fallback: T, onError: (msg: string) => void): Promise<T> {
  try {
    return await op;
  } catch (err) {
    onError(`browser storage unavailable: ${(err as Error).message}`);
    return fallback;
  }
}

export function createTokenStore(onError: (msg: string) => void) {
  return {
    load: () => quiet(get<string>(TOKEN_KEY), undefined, onError),
    save: (token: string) => quiet(set(TOKEN_KEY, token), undefined, onError),
    forget: () => quiet(del(TOKEN_KEY), undefined, onError),
    loadPrefs: async (): Promise<Prefs> => {
      const stored = await quiet(get<Partial<Prefs>>(PREFS_KEY), undefined, onError);
      return {
        autoRefresh:
          typeof stored?.autoRefresh === "boolean" ? stored.autoRefresh : DEFAULT_PREFS.autoRefresh,
        hideOk: typeof stored?.hideOk === "boolean" ? stored.hideOk : DEFAULT_PREFS.hideOk,
      };
    },
    savePrefs: (prefs: Prefs) => quiet(set(PREFS_KEY, prefs), undefined, onError),
  };
}
export type TokenStore = ReturnType<typeof createTokenStore>;
