// A regex knob (progress.test_commands) runs on every bash command the agent
// sends, inside opencode: a pattern with catastrophic backtracking would
// freeze the user's session. Refused at config time by a structural rule, and
// every match runs on a bounded prefix of the command (MATCH_CHARS), which
// keeps what polynomial backtracking is left small.
//
// The rule: a group repeated more than once (*, +, {n,}, {n,m} with m > 1,
// {n} with n > 1) may not contain an unbounded quantifier (*, +, {n,}) or an
// alternation. That refuses (a+)+, (\w+\s?)*, (.*a){12}, (a|aa)+ and (a|a)*,
// and keeps every shipped pattern (their groups are unrepeated or optional).

/** Commands are matched on at most this many characters (test tools are named at the start). */
export const MATCH_CHARS = 1000;

interface Group {
  unbounded: boolean;
  alternation: boolean;
}

/** The quantifier at `i` (if any): its length, whether it repeats more than once, and whether it is unbounded. */
function quantifierAt(src: string, i: number): { len: number; repeats: boolean; unbounded: boolean } | null {
  const c = src[i];
  const lazy = (n: number) => (src[i + n] === "?" || src[i + n] === "+" ? n + 1 : n);
  if (c === "*" || c === "+") return { len: lazy(1), repeats: true, unbounded: true };
  if (c === "?") return { len: lazy(1), repeats: false, unbounded: false };
  if (c !== "{") return null;
  const m = /^\{(\d+)(,(\d*))?\}/.exec(src.slice(i));
  if (!m) return null;
  const min = Number(m[1]);
  const max = m[2] === undefined ? min : m[3] === "" ? Number.POSITIVE_INFINITY : Number(m[3]);
  return { len: lazy(m[0].length), repeats: max > 1, unbounded: max === Number.POSITIVE_INFINITY };
}

/** Why the pattern may backtrack catastrophically, or null when it passes the rule. */
export function regexHazard(src: string): string | null {
  const stack: Group[] = [{ unbounded: false, alternation: false }];
  let inClass = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    const top = stack[stack.length - 1] as Group;
    if (c === "\\") {
      i++;
    } else if (inClass) {
      if (c === "]") inClass = false;
      continue;
    } else if (c === "[") {
      inClass = true;
      continue;
    } else if (c === "(") {
      stack.push({ unbounded: false, alternation: false });
      continue;
    } else if (c === "|") {
      top.alternation = true;
      continue;
    } else if (c === ")") {
      const group = stack.pop() as Group;
      const parent = stack[stack.length - 1];
      if (!parent) return "unbalanced parentheses";
      const q = quantifierAt(src, i + 1);
      if (q?.repeats && (group.unbounded || group.alternation))
        return `a repeated group contains ${group.unbounded ? "an unbounded quantifier" : "an alternation"} (catastrophic backtracking): rewrite it without the nesting`;
      parent.unbounded ||= group.unbounded || q?.unbounded === true;
      parent.alternation ||= group.alternation;
      if (q) i += q.len;
      continue;
    }
    const q = quantifierAt(src, i + 1);
    if (q) {
      top.unbounded ||= q.unbounded;
      i += q.len;
    }
  }
  return null;
}
