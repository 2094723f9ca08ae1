// Istio's `retries` as a route retry_policy. Envoy takes Istio's retryOn as written (numeric codes
// become retriable_status_codes); gRPC clients (gRFC A44) retry only on gRPC status names and at
// most 5 attempts in all, so HTTP-only conditions are dropped and attempts capped.
import type { RetryPolicy } from '../generated/envoy/config/route/v3/RetryPolicy.js';
import type { HTTPRetry } from '../../mesh/types.js';
import { durationOf } from './fault.js';
import type { RouteClient } from './route-context.js';

/** Istio's retryOn when a retry policy names none. */
export const DEFAULT_RETRY_ON = 'connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes';
/** The retry conditions gRFC A44 defines (gRPC status codes). */
export const GRPC_RETRY_ON: readonly string[] = [
  'cancelled',
  'deadline-exceeded',
  'internal',
  'resource-exhausted',
  'unavailable',
];
/** gRFC A44 caps attempts at 5, the first included. */
export const GRPC_MAX_RETRIES = 4;

export function retryTokens(retryOn: string | undefined): string[] {
  return (retryOn ?? DEFAULT_RETRY_ON)
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
}

/** undefined when nothing is retried: attempts 0 or absent (Istio), or no condition this client knows. */
export function retryPolicy(r: HTTPRetry | undefined, client: RouteClient): RetryPolicy | undefined {
  const attempts = r?.attempts ?? 0;
  if (!r || attempts <= 0) return undefined;
  const tokens = retryTokens(r.retryOn);
  if (client === 'grpc') {
    const codes = tokens.filter((t) => GRPC_RETRY_ON.includes(t));
    if (codes.length === 0) return undefined;
    return { retry_on: codes.join(','), num_retries: { value: Math.min(attempts, GRPC_MAX_RETRIES) } };
  }
  const statusCodes = tokens.filter((t) => /^\d{3}$/.test(t)).map(Number);
  const conditions = tokens.filter((t) => !/^\d{3}$/.test(t));
  if (statusCodes.length > 0 && !conditions.includes('retriable-status-codes'))
    conditions.push('retriable-status-codes');
  return {
    retry_on: conditions.join(','),
    num_retries: { value: attempts },
    ...(r.perTryTimeout !== undefined && { per_try_timeout: durationOf(r.perTryTimeout) }),
    ...(statusCodes.length > 0 && { retriable_status_codes: statusCodes }),
  };
}
