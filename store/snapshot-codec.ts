// A registry snapshot to and from the JSON text kept in SQLite. The format carries a version so a
// later change can still read old rows.
import { createHash } from 'node:crypto';
import type { RegistrySnapshot } from '../model/change.js';
import type { Endpoint } from '../model/endpoint.js';
import type { Service } from '../model/service.js';

interface StoredSnapshot {
  readonly format: 1;
  readonly services: readonly Service[];
  readonly endpoints: Readonly<Record<string, readonly Endpoint[]>>;
}

export function encodeSnapshot(snapshot: RegistrySnapshot): { text: string; hash: string } {
  const stored: StoredSnapshot = {
    format: 1,
    services: [...snapshot.services.values()],
    endpoints: Object.fromEntries(snapshot.endpoints),
  };
  const text = JSON.stringify(stored);
  return { text, hash: createHash('sha256').update(text).digest('hex').slice(0, 32) };
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
