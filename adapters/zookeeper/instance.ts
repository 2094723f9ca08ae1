// What a layout's parser makes of one znode: a service instance, an instance deliberately left out
// (Curator's `enabled: false`), or a node it cannot use and reports.
import type { Health } from '../../model/endpoint.js';
import type { Protocol } from '../../model/service.js';
import type { LayoutName } from './flags.js';

export interface InstancePort {
  /** The service port name; the same name across a service's instances. */
  readonly name: string;
  readonly number: number;
  readonly protocol: Protocol;
}

export interface ZkInstance {
  readonly layout: LayoutName;
  /** The znode it was read from, for reports. */
  readonly path: string;
  /** The child of the layout's root it lives under (Curator NAME, Dubbo INTERFACE). */
  readonly group: string;
  readonly hostname: string;
  readonly address: string;
  readonly ports: readonly InstancePort[];
  readonly labels: Readonly<Record<string, string>>;
  readonly serviceLabels: Readonly<Record<string, string>>;
  readonly weight: number;
  readonly health: Health;
}

export type ParseResult =
  | { readonly kind: 'instance'; readonly instance: ZkInstance }
  | { readonly kind: 'disabled' }
  | { readonly kind: 'invalid'; readonly reason: string };

/** A node that was skipped, as /debug/registryz and the log report it. */
export interface NodeProblem {
  readonly layout: LayoutName;
  readonly path: string;
  readonly reason: string;
}

export class InvalidNode extends Error {}

/** Hostname-safe after lower-casing: DNS labels, also allowing `_` (common in service names). */
const HOSTNAME = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

export function checkHostname(hostname: string): string {
  if (hostname.length > 253 || !HOSTNAME.test(hostname)) {
    throw new InvalidNode(`"${hostname}" is not a valid hostname`);
  }
  return hostname;
}

export function checkPort(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) {
    throw new InvalidNode(`${field}: must be an integer in 1..65535, got ${JSON.stringify(value)}`);
  }
  return value;
}
