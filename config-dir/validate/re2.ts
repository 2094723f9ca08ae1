// RE2 syntax, as Envoy and gRPC (safe_regex) will compile it: checked with RE2 itself (re2-wasm, the
// build @grpc/grpc-js-xds matches routes with), so what passes here compiles there. JavaScript's
// RegExp would accept what RE2 refuses (lookaround, backreferences, possessive quantifiers).
import { RE2 } from 're2-wasm';

/**
 * undefined when `pattern` is valid RE2; else RE2's reason, with the part of the pattern it names
 * as the user wrote it (`missing ]`, `invalid perl operator at \`(?=\``).
 */
export function re2Error(pattern: string): string | undefined {
  try {
    new RE2(pattern, 'u');
    return undefined;
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    // re2-wasm says `Invalid regular expression: /<pattern>/u: <RE2's reason>`, the pattern with
    // its `/` escaped; RE2's reason is `<what>: <part>`, the part quoted from the pattern as
    // re2-wasm rewrote it (`/` as `\/`, `(?<` as `(?P<`). Shown as written, or left out.
    const prefix = `Invalid regular expression: /${escapeSlashes(pattern)}/u: `;
    const reason = message.startsWith(prefix) ? message.slice(prefix.length) : message;
    const colon = reason.indexOf(': ');
    if (colon < 0) return reason;
    const what = reason.slice(0, colon);
    const part = reason.slice(colon + 2).replace(/\\\//g, '/');
    const written = [part, part.replace(/\(\?P</g, '(?<')].find((p) => pattern.includes(p));
    return written === undefined || written === pattern ? what : `${what} at \`${written}\``;
  }
}

/** As re2-wasm escapes a pattern: a `/` after an even number of backslashes gets one more. */
function escapeSlashes(pattern: string): string {
  return pattern.replace(/(^|[^\\])((?:\\\\)*)\//g, '$1$2\\/');
}
