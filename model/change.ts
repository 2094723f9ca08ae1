// One vocabulary for a change, from its source to the resource cache. A change names what changed
// by key — the services, the endpoints and the traffic rules of hostnames, the config kinds read
// wholesale, or everything — and is made once, where that is known: a registry's snapshot diff
// (services, endpoints), the config directory's file step (rules, kinds, and the services of its
// ServiceEntries). Events merge by union in the push debouncer; the resource cache rebuilds what read
// one of the keys (Istio's PushRequest.ConfigsUpdated and its cache entries' DependentConfigs()).
import type { Endpoint } from './endpoint.js';
import type { Service } from './service.js';

export interface ChangeEvent {
  /** Hostnames whose Service was added, removed or changed. */
  readonly services: ReadonlySet<string>;
  /** Hostnames whose endpoints changed (a removed service's host is here only if it had endpoints). */
  readonly endpoints: ReadonlySet<string>;
  /**
   * Hostnames whose traffic rules changed: a VirtualService or DestinationRule for the host (resolved
   * to its FQDN, as the mesh index's lookups name it) was added, removed or changed.
   */
  readonly rules: ReadonlySet<string>;
  /**
   * Config kinds that changed as a whole (mesh/config-kinds.ts names them: `sidecars`,
   * `authorizationPolicies`, ...): a resource of the kind was added, removed or changed. A change of
   * VirtualServices or DestinationRules also names their hosts in `rules`.
   */
  readonly kinds: ReadonlySet<string>;
  /** Anything may have changed (a rule with a wildcard host, a reordering, a tool's full push). */
  readonly everything: boolean;
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
  /**
   * The config generation the source's publication got (the config directory numbers each one:
   * `portolan wait`); merged changes keep the highest.
   */
  readonly generation?: number;
}

const NONE: ReadonlySet<string> = new Set();

/** An event naming the given keys; every key left out is empty. */
export function changeOf(keys: {
  readonly services?: Iterable<string>;
  readonly endpoints?: Iterable<string>;
  readonly rules?: Iterable<string>;
  readonly kinds?: Iterable<string>;
  readonly everything?: boolean;
  readonly trigger?: ChangeTrigger;
}): ChangeEvent {
  return {
    services: keys.services ? new Set(keys.services) : NONE,
    endpoints: keys.endpoints ? new Set(keys.endpoints) : NONE,
    rules: keys.rules ? new Set(keys.rules) : NONE,
    kinds: keys.kinds ? new Set(keys.kinds) : NONE,
    everything: keys.everything ?? false,
    ...(keys.trigger && { trigger: keys.trigger }),
  };
}

/** A change that may reach anything (a tool's or a test's full push). */
export function everythingChanged(trigger?: ChangeTrigger): ChangeEvent {
  return changeOf({ everything: true, ...(trigger && { trigger }) });
}

/** Whether the event names nothing at all. */
export function isEmptyChange(event: ChangeEvent): boolean {
  return (
    !event.everything &&
    event.services.size === 0 &&
    event.endpoints.size === 0 &&
    event.rules.size === 0 &&
    event.kinds.size === 0
  );
}

/** Only endpoints changed: an EDS-only push suffices. */
export function endpointsOnly(event: ChangeEvent): boolean {
  return !event.everything && event.services.size === 0 && event.rules.size === 0 && event.kinds.size === 0;
}

/** The mesh config changed (rules, a kind, or everything). */
export function configChanged(event: ChangeEvent): boolean {
  return event.everything || event.rules.size > 0 || event.kinds.size > 0;
}

/** Whether the event may have changed the config kind `kind` (a list name of mesh/config-kinds.ts). */
export function kindChanged(event: ChangeEvent, kind: string): boolean {
  return event.everything || event.kinds.has(kind);
}

/** Every hostname the event names (services, endpoints or rules), each once. */
export function changedHosts(event: ChangeEvent): ReadonlySet<string> {
  if (event.rules.size === 0 && event.endpoints.size === 0) return event.services;
  if (event.rules.size === 0 && event.services.size === 0) return event.endpoints;
  return new Set([...event.services, ...event.endpoints, ...event.rules]);
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
  const services = new Set<string>();
  const endpoints = new Set<string>();
  if (only) {
    for (const host of only) {
      if (!sameData(prev.services.get(host), next.services.get(host))) services.add(host);
      if (!sameData(prev.endpoints.get(host) ?? [], next.endpoints.get(host) ?? [])) endpoints.add(host);
    }
  } else {
    // Two passes instead of a union of the keys: a registry shares unchanged objects between
    // snapshots, so the common case is one identity check per host and no allocation.
    for (const [host, service] of next.services) {
      if (!sameData(prev.services.get(host), service)) services.add(host);
    }
    for (const host of prev.services.keys()) if (!next.services.has(host)) services.add(host);
    for (const [host, list] of next.endpoints) {
      if (!sameData(prev.endpoints.get(host) ?? [], list)) endpoints.add(host);
    }
    for (const [host, list] of prev.endpoints) {
      if (!next.endpoints.has(host) && !sameData(list, [])) endpoints.add(host);
    }
  }
  if (services.size === 0 && endpoints.size === 0) return undefined;
  return { services, endpoints, rules: NONE, kinds: NONE, everything: false };
}

/** Merges events: the union of every key; everything if either was. */
export function mergeChanges(a: ChangeEvent, b: ChangeEvent): ChangeEvent {
  const trigger = mergeTriggers(a.trigger, b.trigger);
  return {
    services: union(a.services, b.services),
    endpoints: union(a.endpoints, b.endpoints),
    rules: union(a.rules, b.rules),
    kinds: union(a.kinds, b.kinds),
    everything: a.everything || b.everything,
    ...(trigger && { trigger }),
  };
}

function union(a: ReadonlySet<string>, b: ReadonlySet<string>): ReadonlySet<string> {
  if (b.size === 0) return a;
  if (a.size === 0) return b;
  const out = new Set(a);
  for (const x of b) out.add(x);
  return out;
}

/** The union of two triggers, each list capped at MAX_TRIGGER_NAMES. */
export function mergeTriggers(
  a: ChangeTrigger | undefined,
  b: ChangeTrigger | undefined,
): ChangeTrigger | undefined {
  if (!a || !b) {
    // A part of unknown origin was not debounced at its source.
    const known = a ?? b;
    if (!known?.debounced) return known;
    const { debounced, ...rest } = known;
    return rest;
  }
  const generation = Math.max(a.generation ?? -1, b.generation ?? -1);
  return {
    registries: capUnion(a.registries, b.registries),
    files: capUnion(a.files, b.files),
    ...(a.debounced && b.debounced && { debounced: true }),
    ...(generation >= 0 && { generation }),
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
