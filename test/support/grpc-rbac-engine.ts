// gRPC's own RBAC engine (@grpc/grpc-js-xds's, gRFC A41) run over a server listener Portolan built:
// each HTTP filter of its connection manager is parsed the way XdsServer parses it, and a call is
// allowed when every RBAC filter allows it — what an XdsServer decides, without the network. Needs
// GRPC_XDS_EXPERIMENTAL_RBAC=true (import ./xds-rbac-env.js first) and `register()` called.
import * as grpc from '@grpc/grpc-js';
import { parseTopLevelFilterConfig } from '@grpc/grpc-js-xds/build/src/http-filter.js';
import type { RbacPolicyGroup, UnifiedInfo } from '@grpc/grpc-js-xds/build/src/rbac.js';
import type { EncodedResource } from '../../xds/proto/resource.js';
import { decodeAny } from '../../xds/proto/protos.js';
import { messageType } from '../../xds/proto/protos.js';

type Obj = Record<string, unknown>;

export interface CallInfo {
  /** `/package.Service/Method`. */
  readonly path: string;
  /** The caller's SPIFFE URI (mTLS); absent for a plaintext caller. */
  readonly peer?: string;
  readonly sourceIp?: string;
  readonly destinationIp?: string;
  readonly destinationPort?: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly authority?: string;
}

export interface ServerRbac {
  /** The names of the HTTP filters before the router. */
  readonly filters: readonly string[];
  /** Whether gRPC lets the call through every RBAC filter. */
  allows(call: CallInfo): boolean;
}

/** The RBAC filters of the (single-chain) server listener `listener`, as grpc-js parses them. */
export function serverRbac(listener: EncodedResource): ServerRbac {
  const decoded = decodeAny(listener.typeUrl, listener.value);
  const chain = (decoded.filter_chains as Obj[])[0] as Obj;
  const hcm = ((chain.filters as Obj[])[0] as Obj).typed_config as Obj;
  const filters = (hcm.http_filters as Obj[]).filter((f) => f.name !== 'envoy.filters.http.router');
  const groups = filters.map((f) => {
    const config = f.typed_config as Obj;
    const typeUrl = config['@type'] as string;
    const { '@type': _, ...message } = config;
    const type = messageType(typeUrl.slice(typeUrl.lastIndexOf('/') + 1));
    const value = Buffer.from(type.encode(type.fromObject(message)).finish());
    const parsed = parseTopLevelFilterConfig({ type_url: typeUrl, value }, false);
    if (!parsed) throw new Error(`grpc-js cannot parse HTTP filter ${String(f.name)}`);
    return parsed.config as RbacPolicyGroup;
  });
  return {
    filters: filters.map((f) => String(f.name)),
    allows: (call) => groups.every((g) => g.apply(info(call))),
  };
}

function info(call: CallInfo): UnifiedInfo {
  const headers = new grpc.Metadata();
  for (const [k, v] of Object.entries(call.headers ?? {})) headers.set(k, v);
  headers.set(':method', 'POST');
  headers.set(':authority', call.authority ?? 'payments.shop.internal:7070');
  headers.set(':path', call.path);
  return {
    destinationIp: call.destinationIp ?? '10.1.0.1',
    destinationPort: call.destinationPort ?? 7070,
    sourceIp: call.sourceIp ?? '10.9.0.1',
    headers,
    tls: call.peer !== undefined,
    peerCertificate: call.peer === undefined ? null : { subjectaltname: `URI:${call.peer}`, subject: {} },
    urlPath: call.path,
  };
}
