// Free text from /progress (the incident report, the top call's target) on
// its way into an alert: control, bidi and other invisible format characters
// removed (a NUL once made notify-send fail, so the alert was lost; a bidi
// override can disguise what a line says), lone surrogates replaced, and
// each channel's markup escaped, so nothing a reporter sends can ping
// @channel in Slack or add a link to a desktop notification. Pure functions.

// C0 except tab and newline, DEL, C1, bidi marks and overrides, zero-width and other invisible format characters.
const INVISIBLE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Text safe to show anywhere: invisible and control characters gone (tab and newline kept). */
export function plainText(s: string): string {
  return s.replace(LONE_SURROGATE, "\ufffd").replace(INVISIBLE, "");
}

/**
 * Slack mrkdwn: & < > escaped as Slack documents, so <!channel>, <!here>,
 * <@U123> and <http://x|label> are shown as text, never acted on.
 */
export function slackText(s: string): string {
  return plainText(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** A Slack code block cannot be closed from inside: backtick runs are broken up. */
export function slackCode(s: string): string {
  return slackText(s).replace(/`/g, "'");
}

/** The notification spec's body markup (<b>, <a href>, ...): escaped like HTML text. */
export function markupText(s: string): string {
  return plainText(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
