// citty option definitions: every command's flags are a string with a
// description or a boolean switch, written once here so the commands read as
// a list of flags and what they mean.

/** A string flag (`--name value`). */
export function stringArg(description: string): { type: "string"; description: string } {
  return { type: "string", description };
}

/** A boolean switch (`--name`); `initial` is its value when absent (citty leaves it undefined otherwise). */
export function switchArg(
  description: string,
  initial?: boolean,
): { type: "boolean"; description: string; default?: boolean } {
  return initial === undefined
    ? { type: "boolean", description }
    : { type: "boolean", description, default: initial };
}
