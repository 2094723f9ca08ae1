// Hostnames as Istio's traffic config writes them: short names resolved against the resource's
// namespace, and wildcard patterns matched most-specific-first.

/** The DNS suffix short names resolve into (`reviews` in `shop` → `reviews.shop.svc.cluster.local`). */
export const DEFAULT_DOMAIN_SUFFIX = 'cluster.local';

/** Istio's rule: a name without a dot is a short name in the resource's namespace; the rest is as written. */
export function resolveHost(host: string, namespace: string, domain = DEFAULT_DOMAIN_SUFFIX): string {
  if (host === '*' || host.includes('.')) return host;
  return `${host}.${namespace}.svc.${domain}`;
}

/** `*` matches everything, `*.suffix` every host ending in `.suffix`, anything else itself. */
export function hostMatches(pattern: string, host: string): boolean {
  if (pattern === '*' || pattern === host) return true;
  return pattern.startsWith('*.') && host.endsWith(pattern.slice(1));
}

/**
 * How specific a pattern that matched is: an exact name beats every wildcard, a longer wildcard
 * beats a shorter one (`*.shop.example.com` over `*.example.com` over `*`).
 */
export function specificity(pattern: string): number {
  return pattern.startsWith('*') ? pattern.length - 1 : Number.MAX_SAFE_INTEGER;
}

/** The most specific of `patterns` matching `host`, with its index; undefined when none does. */
export function bestMatch(
  patterns: readonly string[],
  host: string,
): { pattern: string; specificity: number } | undefined {
  let best: { pattern: string; specificity: number } | undefined;
  for (const pattern of patterns) {
    if (!hostMatches(pattern, host)) continue;
    const s = specificity(pattern);
    if (!best || s > best.specificity) best = { pattern, specificity: s };
  }
  return best;
}
