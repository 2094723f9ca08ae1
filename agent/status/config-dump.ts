// GET /debug/config_dump: what the agent holds. Without `proxyID`, every cached node and open local
// stream in brief; with it, that node's cached resources decoded, and its streams.
import { decodeAny } from '../../xds/proto/protos.js';
import { nodeIdOfKey } from '../xds/cache-key.js';
import type { NodeCache } from '../xds/node-cache.js';
import type { LocalStream } from '../xds/local-stream.js';

export function configDump(
  cache: NodeCache,
  streams: readonly LocalStream[],
  proxyId: string | undefined,
  now = Date.now(),
): { status: number; body: unknown } {
  const streamView = (s: LocalStream): Record<string, unknown> => ({
    id: s.id,
    api: s.api,
    peer: s.peer,
    node: s.nodeId ?? null,
    openedAt: s.openedAt.toISOString(),
    upstream: s.upstreamOpen() ? 'open' : 'waiting for the control plane',
    responsesFromCache: s.cacheResponses,
    types: s.types(),
  });
  if (proxyId === undefined)
    return {
      status: 200,
      body: {
        nodes: cache.list().map((n) => ({
          node: nodeIdOfKey(n.nodeId),
          cacheKey: n.nodeId,
          updatedAt: new Date(n.updatedAt).toISOString(),
          ageSeconds: Math.round((now - n.updatedAt) / 1000),
          bytes: n.bytes,
          resources: Object.fromEntries([...n.types].map(([t, e]) => [t, e.resources.size])),
        })),
        streams: streams.map(streamView),
      },
    };
  // Cached per whole node (cache-key.ts): the newest entry of a node with this id.
  const node = cache
    .list()
    .filter((n) => nodeIdOfKey(n.nodeId) === proxyId)
    .sort((a, b) => b.updatedAt - a.updatedAt)[0];
  const own = streams.filter((s) => s.nodeId === proxyId);
  if (!node && own.length === 0)
    return { status: 404, body: { error: `no node ${proxyId} in the cache or on a stream` } };
  return {
    status: 200,
    body: {
      node: proxyId,
      ...(node && {
        updatedAt: new Date(node.updatedAt).toISOString(),
        ageSeconds: Math.round((now - node.updatedAt) / 1000),
      }),
      cache: node
        ? [...node.types].map(([typeUrl, t]) => ({
            typeUrl,
            versionInfo: t.versionInfo,
            updatedAt: new Date(t.updatedAt).toISOString(),
            resources: [...t.resources.values()].map((r) => {
              try {
                return { name: r.name, version: r.version, resource: decodeAny(r.typeUrl, r.value) };
              } catch {
                return { name: r.name, version: r.version, bytes: r.value.length };
              }
            }),
          }))
        : [],
      streams: own.map(streamView),
    },
  };
}
