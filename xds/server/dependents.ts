// The cache's one index of what depends on what: each cached resource and wildcard list under the
// keys its last build read (a ReadSet: Services, endpoints and rules of hostnames, config kinds,
// listings of the catalog), so that a change finds what read one of the keys it names.
import type { ChangeEvent } from '../../model/change.js';
import type { ReadSet } from '../generators/generator.js';

export class DependentsIndex<D> {
  private readonly services = new Map<string, Set<D>>();
  private readonly endpoints = new Map<string, Set<D>>();
  private readonly rules = new Map<string, Set<D>>();
  private readonly kinds = new Map<string, Set<D>>();
  /** Listed every Service: any service change hits them. */
  private readonly allServices = new Set<D>();
  /** Listed endpoints across services: any endpoint change hits them. */
  private readonly allEndpoints = new Set<D>();

  add(dependent: D, reads: ReadSet): void {
    if (reads.allServices) this.allServices.add(dependent);
    if (reads.allEndpoints) this.allEndpoints.add(dependent);
    for (const h of reads.services) addTo(this.services, h, dependent);
    for (const h of reads.endpoints) addTo(this.endpoints, h, dependent);
    for (const h of reads.rules) addTo(this.rules, h, dependent);
    for (const k of reads.kinds) addTo(this.kinds, k, dependent);
  }

  /** Undoes add(dependent, reads). */
  remove(dependent: D, reads: ReadSet): void {
    if (reads.allServices) this.allServices.delete(dependent);
    if (reads.allEndpoints) this.allEndpoints.delete(dependent);
    for (const h of reads.services) removeFrom(this.services, h, dependent);
    for (const h of reads.endpoints) removeFrom(this.endpoints, h, dependent);
    for (const h of reads.rules) removeFrom(this.rules, h, dependent);
    for (const k of reads.kinds) removeFrom(this.kinds, k, dependent);
  }

  /** Adds to `out` whatever read a key `event` names (its `everything` aside: the cache drops all then). */
  collect(event: ChangeEvent, out: Set<D>): void {
    for (const h of event.services) addAll(out, this.services.get(h));
    if (event.services.size > 0) addAll(out, this.allServices);
    for (const h of event.endpoints) addAll(out, this.endpoints.get(h));
    if (event.endpoints.size > 0) addAll(out, this.allEndpoints);
    for (const h of event.rules) addAll(out, this.rules.get(h));
    for (const k of event.kinds) addAll(out, this.kinds.get(k));
  }

  clear(): void {
    for (const map of [this.services, this.endpoints, this.rules, this.kinds]) map.clear();
    this.allServices.clear();
    this.allEndpoints.clear();
  }
}

function addTo<D>(map: Map<string, Set<D>>, key: string, dependent: D): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(dependent);
}

function removeFrom<D>(map: Map<string, Set<D>>, key: string, dependent: D): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(dependent);
  if (set.size === 0) map.delete(key);
}

function addAll<D>(out: Set<D>, from: ReadonlySet<D> | undefined): void {
  if (from) for (const d of from) out.add(d);
}
