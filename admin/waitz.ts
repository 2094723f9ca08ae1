// GET /debug/waitz?generation=N: whether config generation N (config-dir/generations.ts) has reached
// the streams it changed something for — what `portolan wait` polls. Computed on request from each
// stream's view (StreamView.typeStatus, waitStatus) and what the push loop says it has handed out;
// nothing is kept here, so a stream that went away is simply not listed.
//
// A stream is listed when a push of generation >= N handed it work and that work is queued or a
// response of >= N went out, or when its first response was generated at >= N (it connected since,
// or had been sent nothing before). Then it is NACK when a NACK in force rejected a response of
// >= N (whenever it arrived), PENDING while a type has work queued or its last response, of >= N, is
// not ACKed (a proxyless client's follow-on subscriptions after a route change are such responses),
// and SYNCED otherwise.
import type { WaitNack, WaitProxy, WaitState, WaitzView } from '../model/admin-api.js';
import { PUSH_ORDER, shortTypeName } from '../xds/proto/type-urls.js';
import type { StreamView, TypeStatus } from '../xds/server/observer.js';
import type { PushedGenerations } from '../xds/server/push-loop.js';

/** The highest generation a query may name (an id far beyond it is a typo, not a wait). */
const MAX_GENERATION = Number.MAX_SAFE_INTEGER;

/** Reads `generation` from the query; throws a message for a bad one. */
export function parseGeneration(value: string | null): number {
  if (value === null) throw new Error('the generation query parameter is required');
  if (!/^\d{1,16}$/.test(value))
    throw new Error(`generation must be a non-negative integer, got ${JSON.stringify(value)}`);
  const n = Number(value);
  if (n > MAX_GENERATION) throw new Error('generation is out of range');
  return n;
}

export function waitz(
  streams: readonly StreamView[],
  generation: number,
  current: number,
  pushed: PushedGenerations,
): WaitzView {
  const proxies: WaitProxy[] = [];
  for (const stream of streams) {
    const proxy = waitProxy(stream, generation);
    if (proxy) proxies.push(proxy);
  }
  proxies.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : a.connection < b.connection ? -1 : 1));
  return { generation, current, pushed: isPushed(generation, current, pushed), proxies };
}

/**
 * Whether a push including generation >= N has been handed out: the serving view holds it, or
 * every publication up to now is pushed (none waits in the debouncer) and N is in force (a
 * publication that changed nothing has nothing to push).
 */
function isPushed(generation: number, current: number, pushed: PushedGenerations): boolean {
  if (pushed.generation >= generation) return true;
  return pushed.waiting === undefined && current >= generation;
}

function waitProxy(stream: StreamView, n: number): WaitProxy | undefined {
  const id = stream.proxy?.id;
  const wait = stream.waitStatus?.();
  if (id === undefined || !wait) return undefined;
  const types = ordered(stream.typeStatus());
  const queued = new Set(wait.queued);
  const sentSince = types.some((t) => (t.sentGeneration ?? -1) >= n);
  const changed = wait.changedGeneration >= n && (queued.size > 0 || sentSince);
  const connectedSince = wait.firstSentGeneration !== undefined && wait.firstSentGeneration >= n;
  if (!changed && !connectedSince) return undefined;
  let nack: WaitNack | null = null;
  const pending: string[] = [];
  for (const t of types) {
    const type = shortTypeName(t.typeUrl);
    if (!nack && t.nack && (t.nackGeneration ?? -1) >= n)
      nack = { type, message: t.nack.message, version: t.nack.version };
    const answered = t.acked?.nonce === t.sentNonce || t.nack?.nonce === t.sentNonce;
    const unanswered = (t.sentGeneration ?? -1) >= n && !answered;
    if (queued.has(t.typeUrl) || unanswered) pending.push(type);
  }
  const state: WaitState = nack ? 'NACK' : pending.length > 0 ? 'PENDING' : 'SYNCED';
  return { id, connection: stream.id, state, pending, nack };
}

/** The types in push order (CDS, EDS, LDS, RDS), then any other. */
function ordered(types: readonly TypeStatus[]): TypeStatus[] {
  const rank = (t: TypeStatus): number => {
    const i = PUSH_ORDER.indexOf(t.typeUrl);
    return i < 0 ? PUSH_ORDER.length : i;
  };
  return [...types].sort((a, b) => rank(a) - rank(b));
}
