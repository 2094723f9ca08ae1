// Would this client accept this resource? The one question `portolan diff` (a candidate config) and
// the push path (what is about to be sent) both ask. First version: an Envoy node is checked against
// Envoy's (validate.rules); the client capability table (xds/proxy/client-capabilities.ts) adds the
// per-client rules.
import type { EncodedResource } from '../proto/resource.js';
import { TYPE_URL_PREFIX } from '../proto/type-urls.js';
import type { Proxy } from '../proxy/proxy.js';
import { validateEncoded } from './pgv-validator.js';

/** How many violations a message names (a resource can break many rules at once). */
const MAX_VIOLATIONS_NAMED = 3;

/** undefined when `proxy`'s client accepts `resource`; else why it would reject it. */
export function clientRejection(
  proxy: Proxy,
  typeUrl: string,
  resource: EncodedResource,
): string | undefined {
  if (proxy.kind !== 'envoy') return undefined;
  const violations = validateEncoded(typeUrl.slice(TYPE_URL_PREFIX.length), resource.value);
  if (violations.length === 0) return undefined;
  const named = violations.slice(0, MAX_VIOLATIONS_NAMED).map((v) => `${v.path}: ${v.message}`);
  const more = violations.length > named.length ? ` (and ${violations.length - named.length} more)` : '';
  return `Envoy would reject it (validate.rules): ${named.join('; ')}${more}`;
}
