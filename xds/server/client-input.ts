// Bounds on the strings a client sends in its requests, applied at receipt, before anything stores,
// logs or shows them (docs/security.md, "Bounds on client input"). The request size limit alone does
// not do it: a 3 MiB NACK message per stream and push went to the log, the store's history, and the
// debug views, each keeping its own copy. What identifies the client (node id, cluster, metadata,
// user agent, locality) is refused over its bound, with INVALID_ARGUMENT saying which field and the
// bound; what only describes an event (a NACK's or health report's message) is cut to its bound with a
// marker; nonces and versions longer than any the server issues are cut too (they cannot match one).
import type { NodeInfo } from '../proxy/proxy.js';

export const CLIENT_INPUT_LIMITS = {
  /** A NACK's (or health report's) error_detail.message, in characters; longer ones are cut. */
  errorMessageChars: 4096,
  /** node.id and node.cluster (Istio ids `sidecar~IP~POD.NS~NS.svc.cluster.local` stay under 400). */
  nodeIdChars: 1024,
  /** node.user_agent_name and user_agent_version, and each of locality's region, zone and sub_zone. */
  nodeFieldChars: 256,
  /** node.metadata, as JSON (Istio's sidecars send a few KiB: labels, annotations, proxy config). */
  nodeMetadataBytes: 64 * 1024,
  /** response_nonce and version_info: the server's own are a few dozen characters. */
  nonceChars: 256,
} as const;

/** `text`, or its first `max` characters and a marker saying how much was cut. */
export function truncated(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}… [truncated: ${text.length - max} more characters]`;
}

/** The fields of a SotW or delta request that boundRequest cuts. */
export interface BoundableRequest {
  readonly responseNonce: string;
  readonly versionInfo?: string;
  readonly errorDetail?: { readonly code: number; readonly message: string };
}

/** A request with its event strings cut to their bounds (the same object when nothing is over). */
export function boundRequest<T extends BoundableRequest>(req: T): T {
  const { errorMessageChars, nonceChars } = CLIENT_INPUT_LIMITS;
  const message = req.errorDetail?.message ?? '';
  const over =
    message.length > errorMessageChars ||
    req.responseNonce.length > nonceChars ||
    (req.versionInfo?.length ?? 0) > nonceChars;
  if (!over) return req;
  return {
    ...req,
    responseNonce: truncated(req.responseNonce, nonceChars),
    ...(req.versionInfo !== undefined && { versionInfo: truncated(req.versionInfo, nonceChars) }),
    ...(req.errorDetail && {
      errorDetail: { code: req.errorDetail.code, message: truncated(message, errorMessageChars) },
    }),
  };
}

/** Why `node` is refused (a field over its bound), or undefined when it is within every bound. */
export function nodeBoundsViolation(node: NodeInfo): string | undefined {
  // Field by field, with no list of them made: this runs for every stream that connects.
  const { nodeIdChars, nodeFieldChars, nodeMetadataBytes } = CLIENT_INPUT_LIMITS;
  const over =
    overBound('node.id', node.id, nodeIdChars) ??
    overBound('node.cluster', node.cluster, nodeIdChars) ??
    overBound('node.user_agent_name', node.user_agent_name, nodeFieldChars) ??
    overBound('node.user_agent_version', node.user_agent_version, nodeFieldChars) ??
    overBound('node.locality.region', node.locality?.region, nodeFieldChars) ??
    overBound('node.locality.zone', node.locality?.zone, nodeFieldChars) ??
    overBound('node.locality.sub_zone', node.locality?.sub_zone, nodeFieldChars);
  if (over) return over;
  if (node.metadata) {
    const bytes = Buffer.byteLength(JSON.stringify(node.metadata));
    if (bytes > nodeMetadataBytes)
      return `node.metadata is ${bytes} bytes as JSON; at most ${nodeMetadataBytes}`;
  }
  return undefined;
}

function overBound(field: string, value: string | undefined, max: number): string | undefined {
  return typeof value === 'string' && value.length > max
    ? `${field} is ${value.length} characters; at most ${max}`
    : undefined;
}
