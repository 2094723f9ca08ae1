// Field checks shared by the kinds: names, hostnames, addresses, durations, label maps.
import { isIP } from 'node:net';
import { int, mapOf, num, obj, str, type Check } from './schema.js';
import { durationMs } from '../../model/duration.js';
import { PROTOCOLS, type Protocol } from '../../model/service.js';

const DNS_LABEL = /^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$/;

/** A DNS name: dot-separated labels of letters, digits and `-`, at most 253 characters. */
export function isDnsName(s: string): boolean {
  return s.length > 0 && s.length <= 253 && s.split('.').every((label) => DNS_LABEL.test(label));
}

/** `*`, `*.example.com`, or a DNS name. */
export function isHostOrWildcard(s: string): boolean {
  if (s === '*') return true;
  return s.startsWith('*.') ? isDnsName(s.slice(2)) : isDnsName(s);
}

export function isWildcard(host: string): boolean {
  return host.startsWith('*');
}

export function isCidr(s: string): boolean {
  const [ip = '', prefix, ...rest] = s.split('/');
  const family = isIP(ip);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  if (!/^\d{1,3}$/.test(prefix)) return false;
  return Number(prefix) <= (family === 4 ? 32 : 128);
}

/** `unix:///absolute/path`, as Istio writes Unix domain socket endpoints. */
export function isUnixAddress(s: string): boolean {
  return s.startsWith('unix:///') && s.length > 'unix:///'.length;
}

export type AddressKind = 'ip' | 'unix' | 'dns';

export function addressKind(s: string): AddressKind | undefined {
  if (isIP(s) !== 0) return 'ip';
  if (isUnixAddress(s)) return 'unix';
  if (isDnsName(s)) return 'dns';
  return undefined;
}

/** Go-style duration (`1.5s`, `100ms`, `1m30s`) in milliseconds, or undefined if it does not parse. */
export function parseDuration(text: string): number | undefined {
  return durationMs(text);
}

/** A duration string; a bare number (`timeout: 5`) is rejected because its unit would be a guess. */
export const duration: Check<string> = (value, path, problems) => {
  if (typeof value === 'string' && parseDuration(value) !== undefined) return value;
  problems.error(path, `must be a duration such as 1.5s or 100ms, got ${JSON.stringify(value)}`);
  return undefined;
};

export const portNumber: Check<number> = int(1, 65535);

export const hostname: Check<string> = str({
  test: (s) => (isDnsName(s) ? undefined : `must be a DNS name, got ${JSON.stringify(s)}`),
});

export const hostOrWildcard: Check<string> = str({
  test: (s) =>
    isHostOrWildcard(s)
      ? undefined
      : `must be a DNS name or a wildcard like *.example.com, got ${JSON.stringify(s)}`,
});

export const ipOrCidr: Check<string> = str({
  test: (s) => (isCidr(s) ? undefined : `must be an IP address or CIDR, got ${JSON.stringify(s)}`),
});

/** Label and annotation values must be strings, as in Kubernetes: `version: "1"`, not `version: 1`. */
export const stringMap: Check<Record<string, string>> = mapOf((value, path, problems) => {
  if (typeof value !== 'string') {
    problems.error(path, 'must be a string (quote numbers and booleans)');
    return undefined;
  }
  return value;
});

export const portSelector = obj({ number: portNumber }, { required: ['number'], message: 'PortSelector' });

export const percent = obj({ value: num(0, 100) }, { required: ['value'], message: 'Percent' });

/** Istio's protocol names, case-insensitive. An empty protocol is TCP (Istio would sniff; we do not). */
export const protocol: Check<Protocol> = (value, path, problems) => {
  if (typeof value !== 'string') {
    problems.error(path, 'must be a string');
    return undefined;
  }
  if (value === '') return undefined;
  const upper = value.toUpperCase();
  const known = PROTOCOLS.find((p) => p === upper);
  if (!known) problems.error(path, `must be one of ${PROTOCOLS.join(', ')}, got ${JSON.stringify(value)}`);
  return known;
};
