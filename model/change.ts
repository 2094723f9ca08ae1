// What a registry or the aggregate says when something changed: which hostnames, and whether only
// endpoints did (then an EDS-only push suffices). A change of the mesh config says so (`config`):
// as it arrives it may reach anything; the push loop narrows it, when it can, to the hostnames
// whose rules changed.
import type { Endpoint } from './endpoint.js';
import type { Service } from './service.js';

export interface ChangeEvent {
  readonly hostnames: ReadonlySet<string>;
  readonly endpointsOnly: boolean;
  /**
   * The mesh config changed too. `all`: in ways that may reach any resource; `hosts`: only in the
   * rules of `hostnames` (besides what spans the config). Absent: no config change — except that
   * an event naming no hostname is read as `all` (configScope).
   */
  readonly config?: ConfigScope;
  /** Where the change came from, for the push history (/debug/push_status); absent when unknown. */
  readonly trigger?: ChangeTrigger;
}

/** The sources of a change: the registries that published it and the config files whose edit caused it. */
export interface ChangeTrigger {
  readonly registries: readonly string[];
  readonly files: readonly string[];
  /**
   * The source published this only after a quiet period of its own (the config directory's
   * debounce): the push does not wait for another (push-debouncer.ts).
   */
  readonly debounced?: boolean;
}

export type ConfigScope = 'all' | 'hosts';

/** How far an event's config change reaches; an event naming nothing counts as one that may reach anything. */
export function configScope(event: ChangeEvent): ConfigScope | undefined {
  return event.config ?? (event.hostnames.size === 0 ? 'all' : undefined);
}

/** Names kept per trigger list when changes merge; a storm of edits must not grow a push's record. */
export const MAX_TRIGGER_NAMES = 20;

/** Everything one registry currently knows, keyed by hostname. Immutable once published. */
export interface RegistrySnapshot {
  readonly services: ReadonlyMap<string, Service>;
  readonly endpoints: ReadonlyMap<string, readonly Endpoint[]>;
}

export const EMPTY_SNAPSHOT: RegistrySnapshot = { services: new Map(), endpoints: new Map() };

/**
 * The change between two snapshots, or undefined when they are equal. `only`: the source knows
 * that no other hostname differs (a mutation of one service), and only these are compared.
 */
export function diffSnapshots(
  prev: RegistrySnapshot,
  next: RegistrySnapshot,
  only?: Iterable<string>,
): ChangeEvent | undefined {
  if (only) return diffHosts(prev, next, only);
  const hostnames = new Set<string>();
  // Two passes instead of a union of the keys: a registry shares unchanged objects between
  // snapshots, so the common case is one identity check per host and no allocation.
  for (const [host, service] of next.services) {
    if (!sameData(prev.services.get(host), service)) hostnames.add(host);
  }
  for (const host of prev.services.keys()) if (!next.services.has(host)) hostnames.add(host);
  const serviceChanged = hostnames.size > 0;
  for (const [host, list] of next.endpoints) {
    if (!sameData(prev.endpoints.get(host) ?? [], list)) hostnames.add(host);
  }
  for (const [host, list] of prev.endpoints) {
    if (!next.endpoints.has(host) && !sameData(list, [])) hostnames.add(host);
  }
  if (hostnames.size === 0) return undefined;
  return { hostnames, endpointsOnly: !serviceChanged };
}

function diffHosts(
  prev: RegistrySnapshot,
  next: RegistrySnapshot,
  only: Iterable<string>,
): ChangeEvent | undefined {
  const hostnames = new Set<string>();
  let serviceChanged = false;
  for (const host of only) {
    if (!sameData(prev.services.get(host), next.services.get(host))) {
      hostnames.add(host);
      serviceChanged = true;
    } else if (!sameData(prev.endpoints.get(host) ?? [], next.endpoints.get(host) ?? [])) hostnames.add(host);
  }
  if (hostnames.size === 0) return undefined;
  return { hostnames, endpointsOnly: !serviceChanged };
}

/**
 * Merges events: the union of hostnames; endpoints-only only if every part was; a config change if
 * either was, reaching as far as the farther. The hostnames are kept either way: when the push
 * narrows a config change to some hosts, the registries' hosts must still be among them.
 */
export function mergeChanges(a: ChangeEvent, b: ChangeEvent): ChangeEvent {
  const trigger = mergeTriggers(a.trigger, b.trigger);
  const scopes = [configScope(a), configScope(b)];
  const config = scopes.includes('all') ? 'all' : scopes.includes('hosts') ? 'hosts' : undefined;
  return {
    hostnames: new Set([...a.hostnames, ...b.hostnames]),
    endpointsOnly: a.endpointsOnly && b.endpointsOnly && config === undefined,
    ...(config && { config }),
    ...(trigger && { trigger }),
  };
}

/** The union of two triggers, each list capped at MAX_TRIGGER_NAMES. */
export function mergeTriggers(
  a: ChangeTrigger | undefined,
  b: ChangeTrigger | undefined,
): ChangeTrigger | undefined {
  if (!a || !b) {
    // A part of unknown origin was not debounced at its source.
    const known = a ?? b;
    return known?.debounced ? { registries: known.registries, files: known.files } : known;
  }
  return {
    registries: capUnion(a.registries, b.registries),
    files: capUnion(a.files, b.files),
    ...(a.debounced && b.debounced && { debounced: true }),
  };
}

function capUnion(a: readonly string[], b: readonly string[]): string[] {
  const out = new Set(a);
  for (const x of b) {
    if (out.size >= MAX_TRIGGER_NAMES) break;
    out.add(x);
  }
  return [...out];
}

/**
 * Whether two registry values are the same data: what their JSON would say, compared in place.
 * Registry objects are plain data (objects, arrays, strings, numbers, booleans; a key holding
 * undefined counts as absent, as in JSON), so no text is built for either side: stringifying a
 * service and its endpoints twice was the costliest step of a one-host diff. Anything else (a Map,
 * a Date) is compared by its JSON.
 */
export function sameData(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameData(a[i], b[i])) return false;
    return true;
  }
  if (!isPlainObject(a) || !isPlainObject(b)) return JSON.stringify(a) === JSON.stringify(b);
  let keys = 0;
  for (const key of Object.keys(a)) {
    const value = a[key];
    if (value === undefined) continue;
    keys++;
    if (!sameData(value, b[key])) return false;
  }
  for (const key of Object.keys(b)) if (b[key] !== undefined) keys--;
  return keys === 0;
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
