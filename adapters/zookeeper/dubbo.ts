// Dubbo providers: ROOT/INTERFACE/providers/URL, where URL is the provider's URL, URL-encoded, e.g.
// `dubbo://10.0.0.5:20880/org.demo.Greeter?interface=org.demo.Greeter&group=g1&version=1.0.0&…`.
// Everything is in the node's name; its data is not read. The query becomes the endpoint's labels.
import { isIP } from 'node:net';
import type { Health } from '../../model/endpoint.js';
import type { Protocol } from '../../model/service.js';
import { checkHostname, checkPort, InvalidNode, type ParseResult, type ZkInstance } from './instance.js';

export interface DubboContext {
  /** The INTERFACE node the provider is listed under. */
  readonly group: string;
  readonly path: string;
  /** Appended as `.SUFFIX` when not empty. */
  readonly suffix: string;
}

/** Dubbo's default provider weight, used when the URL has none. */
export const DUBBO_DEFAULT_WEIGHT = 100;

/**
 * The hostname of a Dubbo service, by aeraki-mesh/dubbo2istio's rule: the interface, then `-GROUP` if
 * the group is set, then `-VERSION` with the version's dots turned into dashes if the version is set,
 * all lower-cased (the interface keeps its dots). `--zk-dubbo-suffix` may append `.SUFFIX`.
 */
export function dubboHostname(iface: string, group: string, version: string, suffix: string): string {
  let host = iface;
  if (group !== '') host += `-${group}`;
  if (version !== '') host += `-${version.replaceAll('.', '-')}`;
  host = host.toLowerCase();
  return suffix === '' ? host : `${host}.${suffix}`;
}

/** The service protocol a provider URL's scheme stands for (Triple is gRPC on the wire). */
export function dubboProtocol(scheme: string): Protocol {
  switch (scheme) {
    case 'tri':
    case 'grpc':
      return 'GRPC';
    case 'rest':
    case 'http':
      return 'HTTP';
    default:
      return 'TCP';
  }
}

export function parseDubboProvider(nodeName: string, ctx: DubboContext): ParseResult {
  try {
    return parse(nodeName, ctx);
  } catch (err) {
    if (err instanceof InvalidNode) return { kind: 'invalid', reason: err.message };
    throw err;
  }
}

function parse(nodeName: string, ctx: DubboContext): ParseResult {
  let url: string;
  try {
    // Java's URLEncoder, which Dubbo uses, writes spaces as `+`.
    url = decodeURIComponent(nodeName.replaceAll('+', ' '));
  } catch {
    throw new InvalidNode('the node name is not URL-encoded');
  }
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)(\/[^?#]*)?(?:\?([^#]*))?$/i.exec(url);
  if (!m) throw new InvalidNode(`not a provider URL: "${url}"`);
  const scheme = (m[1] ?? '').toLowerCase();
  const { address, port } = hostAndPort(m[2] ?? '');
  const params = queryParams(m[4] ?? '');

  if (params.enabled === 'false') return { kind: 'disabled' };
  const iface = params.interface || (m[3] ?? '').replace(/^\//, '') || ctx.group;
  const group = params.group ?? '';
  const version = params.version ?? '';
  const { weight, health } = weightOf(params.weight);

  const serviceLabels: Record<string, string> = { interface: iface };
  if (group !== '') serviceLabels.group = group;
  if (version !== '') serviceLabels.version = version;
  const instance: ZkInstance = {
    layout: 'dubbo',
    path: ctx.path,
    group: ctx.group,
    hostname: checkHostname(dubboHostname(iface, group, version, ctx.suffix)),
    address,
    ports: [{ name: scheme, number: port, protocol: dubboProtocol(scheme) }],
    labels: params,
    serviceLabels,
    weight,
    health,
  };
  return { kind: 'instance', instance };
}

function hostAndPort(authority: string): { address: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d+)$/.exec(authority);
  if (!m) throw new InvalidNode(`"${authority}" is not HOST:PORT`);
  const address = m[1] ?? m[2] ?? '';
  if (isIP(address) === 0) throw new InvalidNode(`"${address}" is not an IP address`);
  return { address, port: checkPort(Number(m[3]), 'port') };
}

/** Dubbo's own query parsing: `&`-separated, split at the first `=`, no second decoding. */
function queryParams(query: string): Record<string, string> {
  const params: Record<string, string> = {};
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const key = eq === -1 ? part : part.slice(0, eq);
    if (key !== '') params[key] = eq === -1 ? '' : part.slice(eq + 1);
  }
  return params;
}

/** Dubbo sends no traffic to a weight-0 provider: it drains here. */
function weightOf(text: string | undefined): { weight: number; health: Health } {
  if (text === undefined || text === '') return { weight: DUBBO_DEFAULT_WEIGHT, health: 'HEALTHY' };
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new InvalidNode(`weight: "${text}" is not an integer >= 0`);
  return n === 0 ? { weight: 1, health: 'DRAINING' } : { weight: n, health: 'HEALTHY' };
}
