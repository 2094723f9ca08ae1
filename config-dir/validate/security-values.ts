// The values AuthorizationPolicy fields take, checked as Istio matches them: a value is exact,
// `*` (present), `prefix*` or `*suffix` — one `*`, at an end — and what is left must fit the field:
// peer principals `TRUST_DOMAIN/ns/NAMESPACE/sa/SERVICE_ACCOUNT` (what of it a prefix or suffix
// names), namespaces and service accounts as identity segments, IPs and CIDRs, ports, HTTP paths.
import { isCidr } from './common.js';
import { str, type Check } from './schema.js';

/** How a pattern value matches (xds/traffic/authz-matchers.ts renders each). */
export type PatternKind = 'any' | 'prefix' | 'suffix' | 'exact';

/** `*` → any; `a*` → prefix a; `*a` → suffix a; else exact. Undefined when `*` is elsewhere. */
export function patternOf(value: string): { kind: PatternKind; literal: string } | undefined {
  if (value === '*') return { kind: 'any', literal: '' };
  const stars = value.split('*').length - 1;
  if (stars === 0) return { kind: 'exact', literal: value };
  if (stars > 1) return undefined;
  if (value.endsWith('*')) return { kind: 'prefix', literal: value.slice(0, -1) };
  if (value.startsWith('*')) return { kind: 'suffix', literal: value.slice(1) };
  return undefined;
}

const STAR_RULE = 'a single * only at the start or the end (exact, *, prefix* or *suffix)';

/** A non-empty pattern whose literal part passes `fits` (given the pattern's kind). */
function patternValue(
  what: string,
  fits: (literal: string, kind: PatternKind) => string | undefined = () => undefined,
): Check<string> {
  return str({
    nonEmpty: true,
    test: (s) => {
      const p = patternOf(s);
      if (!p) return `${what} ${JSON.stringify(s)}: ${STAR_RULE}`;
      return p.kind === 'any' ? undefined : fits(p.literal, p.kind);
    },
  });
}

// The identity charset Portolan's CA issues (ca/identity.ts): letters, digits, '.', '_', '-'.
const SEGMENT = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;
const SEGMENT_CHARS = /^[A-Za-z0-9._-]*$/;
const TRUST_DOMAIN = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/;
const TRUST_DOMAIN_CHARS = /^[a-z0-9.-]*$/;

/** The five segments of a principal: what each must be, whole and as part of a prefix/suffix. */
const PRINCIPAL_SHAPE: readonly { whole: (s: string) => boolean; part: (s: string) => boolean }[] = [
  { whole: (s) => TRUST_DOMAIN.test(s), part: (s) => TRUST_DOMAIN_CHARS.test(s) },
  { whole: (s) => s === 'ns', part: (s) => 'ns'.includes(s) },
  { whole: (s) => SEGMENT.test(s), part: (s) => SEGMENT_CHARS.test(s) },
  { whole: (s) => s === 'sa', part: (s) => 'sa'.includes(s) },
  { whole: (s) => SEGMENT.test(s), part: (s) => SEGMENT_CHARS.test(s) },
];

const PRINCIPAL_FORM = 'TRUST_DOMAIN/ns/NAMESPACE/sa/SERVICE_ACCOUNT (like cluster.local/ns/shop/sa/orders)';

function principalFits(literal: string, kind: PatternKind): string | undefined {
  if (literal.startsWith('spiffe://'))
    return `write the identity without spiffe:// (${PRINCIPAL_FORM}), got ${JSON.stringify(literal)}`;
  const segments = literal.split('/');
  const bad = `must be ${PRINCIPAL_FORM}, or a prefix* / *suffix of one, got`;
  const shown = JSON.stringify(
    kind === 'prefix' ? `${literal}*` : kind === 'suffix' ? `*${literal}` : literal,
  );
  if (segments.length > PRINCIPAL_SHAPE.length) return `${bad} ${shown}`;
  const ok =
    kind === 'exact'
      ? segments.length === 5 && segments.every((s, i) => PRINCIPAL_SHAPE[i]?.whole(s))
      : kind === 'prefix'
        ? segments.every((s, i) =>
            i === segments.length - 1 ? PRINCIPAL_SHAPE[i]?.part(s) : PRINCIPAL_SHAPE[i]?.whole(s),
          )
        : segments.every((s, i) => {
            const shape = PRINCIPAL_SHAPE[PRINCIPAL_SHAPE.length - segments.length + i];
            return i === 0 ? shape?.part(s) : shape?.whole(s);
          });
  return ok ? undefined : `${bad} ${shown}`;
}

/**
 * A peer principal pattern (`principals`, `source.principal`). Istio takes any non-empty string
 * here; one that no identity of the form TRUST_DOMAIN/ns/NAMESPACE/sa/SERVICE_ACCOUNT can match is
 * a warning (it never matches: an ALLOW rule allows nothing by it, a DENY rule denies nothing).
 */
export const principal: Check<string> = (value, path, problems) => {
  const checked = patternValue('principal')(value, path, problems);
  if (checked === undefined) return undefined;
  const p = patternOf(checked);
  const complaint = p && p.kind !== 'any' ? principalFits(p.literal, p.kind) : undefined;
  if (complaint !== undefined) problems.warn(path, `never matches: ${complaint}`);
  return checked;
};

/** A namespace pattern (`namespaces`, `source.namespace`). */
export const namespacePattern = patternValue('namespace', (literal) =>
  SEGMENT_CHARS.test(literal)
    ? undefined
    : `namespace ${JSON.stringify(literal)}: letters, digits, '.', '_' and '-'`,
);

/** `NAME` or `NAMESPACE/NAME` (no patterns: Istio matches service accounts exactly). */
export const serviceAccount: Check<string> = str({
  nonEmpty: true,
  test: (s) => {
    const parts = s.split('/');
    return parts.length <= 2 && parts.every((p) => SEGMENT.test(p))
      ? undefined
      : `must be SERVICE_ACCOUNT or NAMESPACE/SERVICE_ACCOUNT, got ${JSON.stringify(s)}`;
  },
});

/** A request principal (`ISSUER/SUBJECT` of a JWT) pattern. */
export const requestPrincipal = patternValue('request principal');

/** A host pattern (`hosts`): a host name, optionally with its port, matched case-insensitively. */
export const hostPattern = patternValue('host', (literal) =>
  /^[A-Za-z0-9.:[\]_-]*$/.test(literal)
    ? undefined
    : `host ${JSON.stringify(literal)}: a host name, optionally with :PORT`,
);

/** An HTTP method pattern (`GET`; for gRPC always `POST`). */
export const methodPattern = patternValue('method', (literal) =>
  /^[A-Za-z0-9!#$%&'+.^_`|~-]*$/.test(literal) ? undefined : `method ${JSON.stringify(literal)}: a token`,
);

/** A path pattern; for gRPC `/package.Service/Method`. Path templates (`{*}`) are not rendered. */
const pathValue = patternValue('path', (literal, kind) => {
  if (kind !== 'suffix' && !literal.startsWith('/'))
    return `path ${JSON.stringify(literal)}: must start with /`;
  return /[\s?#]/.test(literal) ? `path ${JSON.stringify(literal)}: no spaces, query or fragment` : undefined;
});

export const pathPattern: Check<string> = (value, path, problems) => {
  if (typeof value === 'string' && /[{}]/.test(value)) {
    problems.error(path, `path templates ({*}, {**}) are not supported, got ${JSON.stringify(value)}`);
    return undefined;
  }
  return pathValue(value, path, problems);
};

/** An IP or CIDR (`ipBlocks`, `source.ip`, …). */
export const cidr: Check<string> = str({
  test: (s) => (isCidr(s) ? undefined : `must be an IP address or CIDR, got ${JSON.stringify(s)}`),
});

/** A port as Istio writes it (a string); a YAML number is accepted and kept as its string. */
export const portString: Check<string> = (value, path, problems) => {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text === 'string' && /^\d{1,5}$/.test(text) && Number(text) >= 1 && Number(text) <= 65535)
    return text;
  problems.error(path, `must be a port number in 1..65535, got ${JSON.stringify(value)}`);
  return undefined;
};

/** An HTTP header name (RFC 9110 token), lower or upper case. */
export function isHeaderName(s: string): boolean {
  return /^:?[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(s);
}
