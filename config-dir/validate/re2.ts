// RE2 syntax, as Envoy and gRPC (safe_regex) will compile it: checked with RE2 itself (re2-wasm, the
// build @grpc/grpc-js-xds matches routes with), so what passes here compiles there. JavaScript's
// RegExp would accept what RE2 refuses (lookaround, backreferences, possessive quantifiers).
import { RE2 } from 're2-wasm';

/** undefined when `pattern` is valid RE2; else RE2's reason. */
export function re2Error(pattern: string): string | undefined {
  try {
    new RE2(pattern, 'u');
    return undefined;
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    // "Invalid regular expression: /x/u: invalid perl operator: (?=" → "invalid perl operator: (?="
    return message.replace(/^Invalid regular expression: \/.*\/u: /s, '');
  }
}
