// An admin's mark in words. The two kinds are calibrate's two labels
// (false_alarm: healthy, confirmed_loop: loop); on a session that was never
// flagged the same kinds read "healthy" and "missed loop", since nothing
// was raised to call false or to confirm.

export type MarkKind = "false_alarm" | "confirmed_loop";

/** Whether the session was ever flagged (its worst verdict, or a flag counted). */
export function wasFlagged(s: { worst: string; flags: number }): boolean {
  return s.worst !== "ok" || s.flags > 0;
}

/** The mark in words: "false alarm" / "confirmed loop", or "healthy" / "missed loop" when never flagged. */
export function markWords(kind: string, flagged: boolean): string {
  if (kind === "false_alarm") return flagged ? "false alarm" : "healthy";
  if (kind === "confirmed_loop") return flagged ? "confirmed loop" : "missed loop";
  return kind;
}

/** The two buttons of the session page, named for what they say about this session. */
export function markButtons(flagged: boolean): Array<{ kind: MarkKind; label: string; title: string }> {
  return [
    {
      kind: "false_alarm",
      label: flagged ? "False alarm" : "Healthy",
      title: flagged
        ? "label it healthy for calibrate; lifts every refusal in its tree"
        : "label it healthy for calibrate (a false_alarm mark; nothing to lift)",
    },
    {
      kind: "confirmed_loop",
      label: flagged ? "Confirmed loop" : "Missed loop",
      title: flagged
        ? "label it a loop for calibrate"
        : "label it a loop the detection missed, for calibrate (a confirmed_loop mark)",
    },
  ];
}
