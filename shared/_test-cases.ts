// Test-only: it.each rows for a yes/no classifier, so a test lists the inputs
// that must say yes and those that must say no, and checks each one by name.
export function yesNoCases(
  yes: readonly string[],
  no: readonly string[],
): Array<{ input: string; expected: boolean }> {
  return [
    ...yes.map((input) => ({ input, expected: true })),
    ...no.map((input) => ({ input, expected: false })),
  ];
}
