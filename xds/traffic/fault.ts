// Istio's `fault` as Envoy's HTTPFault (gRFC A33 reads the same message): the filter sits in the
// HttpConnectionManager with an empty config, and each route carries its own in typed_per_filter_config.
import type { HTTPFault } from '../generated/envoy/extensions/filters/http/fault/v3/HTTPFault.js';
import type { FractionalPercent } from '../generated/envoy/type/v3/FractionalPercent.js';
import type { Duration } from '../generated/google/protobuf/Duration.js';
import type { HttpConnectionManager } from '../generated/envoy/extensions/filters/network/http_connection_manager/v3/HttpConnectionManager.js';
import type { HTTPFaultInjection, Percent } from '../../mesh/types.js';
import { durationMs } from '../../model/duration.js';
import { grpcStatusCode } from '../../model/grpc-status.js';
import { toAny } from '../proto/resource.js';

export const FAULT_FILTER_NAME = 'envoy.filters.http.fault';
export const FAULT_TYPE = 'type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault';

type HttpFilter = NonNullable<HttpConnectionManager['http_filters']>[number];

/** The fault filter as it goes in an HCM's http_filters, before the router: inert until a route configures it. */
export function faultHttpFilter(): HttpFilter {
  return { name: FAULT_FILTER_NAME, typed_config: toAny(FAULT_TYPE, {}) };
}

/** Milliseconds as a google.protobuf.Duration. */
export function protoDuration(ms: number): Duration {
  const seconds = Math.floor(ms / 1000);
  return { seconds: String(seconds), nanos: Math.round((ms - seconds * 1000) * 1e6) };
}

/** A duration string already validated by the config loader. */
export function durationOf(text: string): Duration {
  return protoDuration(durationMs(text) ?? 0);
}

/** Istio's percentage (0..100, fractional) in millionths; absent means all requests. */
export function fractionalPercent(p: Percent | undefined): FractionalPercent {
  return { numerator: Math.round((p?.value ?? 100) * 10_000), denominator: 'MILLION' };
}

export function httpFault(fault: HTTPFaultInjection): HTTPFault {
  const out: HTTPFault = {};
  if (fault.delay)
    out.delay = {
      fixed_delay: durationOf(fault.delay.fixedDelay),
      percentage: fractionalPercent(fault.delay.percentage),
    };
  const abort = fault.abort;
  if (abort) {
    const grpc = abort.grpcStatus === undefined ? undefined : grpcStatusCode(abort.grpcStatus);
    out.abort = {
      ...(grpc === undefined ? { http_status: abort.httpStatus ?? 503 } : { grpc_status: grpc }),
      percentage: fractionalPercent(abort.percentage),
    };
  }
  return out;
}

/** The route's typed_per_filter_config entry for a fault. */
export function faultPerFilterConfig(fault: HTTPFaultInjection): Record<string, ReturnType<typeof toAny>> {
  return { [FAULT_FILTER_NAME]: toAny(FAULT_TYPE, httpFault(fault)) };
}
