// The unified diff of two versions of one resource, as `portolan proxy-config -o json` prints a
// resource (decoded, JSON with two-space indent): `-`, `+` and ` ` lines, three lines of context,
// no file or hunk headers (the contract of POST /debug/diff). jsdiff (`diff`) computes it.
import { structuredPatch } from 'diff';

/** Past this many edits the diff is not searched for: every line is given as removed, then added. */
const MAX_EDIT_LENGTH = 20_000;

export function resourceDiff(before: unknown, after: unknown): string {
  const a = `${JSON.stringify(before, null, 2)}\n`;
  const b = `${JSON.stringify(after, null, 2)}\n`;
  const patch = structuredPatch('', '', a, b, undefined, undefined, {
    context: 3,
    maxEditLength: MAX_EDIT_LENGTH,
  });
  const lines = patch
    ? patch.hunks.flatMap((h) => h.lines)
    : [...lines_(a).map((l) => `-${l}`), ...lines_(b).map((l) => `+${l}`)];
  // jsdiff marks a last line without a newline; both texts end with one, but keep the contract.
  return lines.filter((l) => !l.startsWith('\\')).join('\n');
}

function lines_(text: string): string[] {
  return text.replace(/\n$/, '').split('\n');
}
