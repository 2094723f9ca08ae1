// gRPC status codes by name, as Istio config writes them (`grpcStatus: UNAVAILABLE`) and as xDS
// carries them (numbers).
export const GRPC_STATUS_CODES: Readonly<Record<string, number>> = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
};

/** A status name (any case) or its number as text; undefined when it is neither. */
export function grpcStatusCode(text: string): number | undefined {
  if (/^\d{1,2}$/.test(text)) {
    const n = Number(text);
    return n <= 16 ? n : undefined;
  }
  return GRPC_STATUS_CODES[text.toUpperCase()];
}
