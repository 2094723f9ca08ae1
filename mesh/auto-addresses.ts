// Addresses for services that have none (Istio's DNS auto-allocation): each hostname without an IP
// address, not a wildcard and not resolution NONE gets one address from 240.240.0.0/16 (class E,
// never routed) and one from 2001:2::/48 (the benchmarking range), which the agent's DNS proxy
// answers and transparent-mode Envoys listen on. An address is a hash of the hostname, so it stays
// the same across pushes and restarts; a collision moves the later name (in name order) to the next
// free slot, so only colliding names can move when the set changes.
import { isIP } from 'node:net';
import type { Service } from '../model/service.js';

export const AUTO_ALLOCATE_V4_RANGE = '240.240.0.0/16';
export const AUTO_ALLOCATE_V6_RANGE = '2001:2::/48';

/** Slots 1..65534: 240.240.0.1 .. 240.240.255.254. */
const SLOTS = 65534;

export interface AllocatedAddress {
  readonly v4: string;
  readonly v6: string;
}

/** The service's own IP addresses (a single-host CIDR counts), without allocated ones. */
export function serviceIps(service: Service): string[] {
  return service.addresses.map((a) => a.replace(/\/(32|128)$/, '')).filter((a) => isIP(a) !== 0);
}

export function needsAddress(service: Service): boolean {
  return (
    !service.hostname.startsWith('*') && service.resolution !== 'NONE' && serviceIps(service).length === 0
  );
}

/** The allocation for every service that needs one, by hostname. */
export function allocateAddresses(services: readonly Service[]): Map<string, AllocatedAddress> {
  const names = services
    .filter(needsAddress)
    .map((s) => s.hostname)
    .sort();
  const taken = new Set<number>();
  const out = new Map<string, AllocatedAddress>();
  for (const name of names) {
    if (taken.size >= SLOTS) break;
    let slot = (fnv1a(name) % SLOTS) + 1;
    while (taken.has(slot)) slot = (slot % SLOTS) + 1;
    taken.add(slot);
    out.set(name, { v4: `240.240.${slot >> 8}.${slot & 255}`, v6: `2001:2::${slot.toString(16)}` });
  }
  return out;
}

function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
