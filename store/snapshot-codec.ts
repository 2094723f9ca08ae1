// A registry snapshot to and from the JSON text kept in SQLite. The format carries a version so a
// later change can still read old rows.
import { sha256 } from '../model/sha256.js';
import type { RegistrySnapshot } from '../model/change.js';
import type { Endpoint } from '../model/endpoint.js';
import type { Service } from '../model/service.js';

interface StoredSnapshot {
  readonly format: 1;
  readonly services: readonly Service[];
  readonly endpoints: Readonly<Record<string, readonly Endpoint[]>>;
}

export function encodeSnapshot(snapshot: RegistrySnapshot): { text: string; hash: string } {
  const text = [...snapshot.endpoints.keys()].some(isIndexLike)
    ? JSON.stringify({
        format: 1,
        services: [...snapshot.services.values()],
        endpoints: Object.fromEntries(snapshot.endpoints),
      } satisfies StoredSnapshot)
    : assemble(snapshot);
  return { text, hash: sha256(text, 'hex').slice(0, 32) };
}

// Snapshot objects are immutable and a registry shares the unchanged ones between snapshots, so each
// is turned into JSON once; a save then joins strings instead of serialising the whole registry.
const encoded = new WeakMap<object, string>();

export function json(value: Service | readonly Endpoint[]): string {
  let text = encoded.get(value);
  if (text === undefined) {
    text = JSON.stringify(value);
    encoded.set(value, text);
  }
  return text;
}

/** Exactly JSON.stringify of the StoredSnapshot, from the per-object cache. */
function assemble(snapshot: RegistrySnapshot): string {
  const services = [...snapshot.services.values()].map(json).join(',');
  const endpoints = [...snapshot.endpoints].map(([host, list]) => `${JSON.stringify(host)}:${json(list)}`);
  return `{"format":1,"services":[${services}],"endpoints":{${endpoints.join(',')}}}`;
}

// Object.fromEntries puts integer-like keys first, in numeric order: such a registry takes the slow path.
function isIndexLike(key: string): boolean {
  return /^(0|[1-9][0-9]*)$/.test(key) && Number(key) < 2 ** 32 - 1;
}

export function decodeSnapshot(text: string): RegistrySnapshot {
  const stored = JSON.parse(text) as Partial<StoredSnapshot>;
  const services = stored.services;
  if (stored.format !== 1 || services === undefined || typeof stored.endpoints !== 'object') {
    throw new Error('unrecognised snapshot format');
  }
  return {
    services: new Map(services.map((s) => [s.hostname, s])),
    endpoints: new Map(Object.entries(stored.endpoints ?? {})),
  };
}

/** The registry_snapshots text of a snapshot kept as one row per hostname (registry_hosts). */
export const PER_HOST_FORMAT = '{"format":2}';

export function isPerHost(text: string): boolean {
  return text === PER_HOST_FORMAT;
}

/** A snapshot from its registry_hosts rows. */
export function decodeHosts(
  rows: readonly { host: string; service: string | null; endpoints: string | null }[],
): RegistrySnapshot {
  const services = new Map<string, Service>();
  const endpoints = new Map<string, readonly Endpoint[]>();
  for (const row of rows) {
    if (row.service !== null) services.set(row.host, JSON.parse(row.service) as Service);
    if (row.endpoints !== null) endpoints.set(row.host, JSON.parse(row.endpoints) as readonly Endpoint[]);
  }
  return { services, endpoints };
}
