// Would this client accept this resource? The one question `portolan diff` (a candidate config) and
// the push path (what is about to be sent, xds/validate/withholding-generator.ts) both ask. The
// rules are the client capability table's (xds/proxy/client-capabilities.ts: `rejects`), Envoy's
// (validate.rules) among them; the resource is decoded once for all the checks of its type.
import type { EncodedResource } from '../proto/resource.js';
import { messageType } from '../proto/protos.js';
import { TYPE_URL_PREFIX } from '../proto/type-urls.js';
import { clientProfile, type ClientRule, type RuleCheck } from '../proxy/client-capabilities.js';
import type { Proxy } from '../proxy/proxy.js';

export interface Rejection {
  readonly rule: ClientRule;
  /** What the client would say (the check's words). */
  readonly detail: string;
  /** rule, clients, reason and detail in one line: what diff's problems and the log show. */
  readonly message: string;
}

/** undefined when `proxy`'s client accepts `resource`; else why it would reject it. */
export function clientRejection(
  proxy: Proxy,
  typeUrl: string,
  resource: EncodedResource,
): string | undefined {
  return findRejection(proxy, typeUrl, resource)?.message;
}

/**
 * Answers by the checks applied and the resource's version (a hash of its bytes): shares whose
 * builds come out byte-equal (most clusters of sidecars in different namespaces, every EDS view of
 * one assignment) are decoded and checked once. Bounded; the oldest answer goes first.
 */
const MAX_ANSWERS = 20_000;
const answers = new Map<string, Rejection | null>();
const checkIds = new WeakMap<readonly RuleCheck[], string>();

/** clientRejection with the rule that says no (the first one whose check fails). */
export function findRejection(
  proxy: Proxy,
  typeUrl: string,
  resource: EncodedResource,
): Rejection | undefined {
  const checks = clientProfile(proxy).checks(typeUrl);
  if (checks.length === 0) return undefined;
  let ids = checkIds.get(checks);
  if (ids === undefined) checkIds.set(checks, (ids = checks.map((c) => c.rule.id).join(',')));
  const key = `${ids}\0${typeUrl}\0${resource.version}`;
  const known = answers.get(key);
  if (known !== undefined) return known ?? undefined;
  const answer = check(checks, typeUrl, resource);
  answers.set(key, answer ?? null);
  if (answers.size > MAX_ANSWERS) {
    const oldest = answers.keys().next();
    if (!oldest.done) answers.delete(oldest.value);
  }
  return answer;
}

function check(
  checks: readonly RuleCheck[],
  typeUrl: string,
  resource: EncodedResource,
): Rejection | undefined {
  const first = checks[0];
  if (!first) return undefined;
  let message: object;
  try {
    message = messageType(typeUrl.slice(TYPE_URL_PREFIX.length)).decode(resource.value);
  } catch (err) {
    // Our own encoding: cannot happen short of a bug, and then no client takes it either.
    const detail = `does not decode: ${err instanceof Error ? err.message : String(err)}`;
    return { rule: first.rule, detail, message: detail };
  }
  for (const { rule, check } of checks) {
    const detail = check(message);
    if (detail !== undefined)
      return {
        rule,
        detail,
        message: `${rule.clients} would reject it (rule ${rule.id}): ${detail}. Why: ${rule.reason}`,
      };
  }
  return undefined;
}
