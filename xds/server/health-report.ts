// Istio's health report: an `istio.io/health` request whose `error_detail` says why the workload
// is not ready, or has none when it is. It is not a subscription and gets no response.
import type { HealthReport } from './observer.js';

/** The longest reason kept from a report (a probe's error, not a document). */
const MAX_MESSAGE = 1024;

export function healthReport(errorDetail: { readonly message: string } | undefined): HealthReport {
  if (!errorDetail) return { healthy: true, message: '' };
  return { healthy: false, message: errorDetail.message.slice(0, MAX_MESSAGE) || 'unhealthy' };
}
