// `portolan proxy-status` names a portolan agent's own control stream as the agent, not as a gRPC
// proxy with nothing sent (issue #48): it subscribes to none of the proxy types.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ProxySync } from '../../../admin/syncz.js';
import { statusTable } from '../../../cli/proxy-status.js';

const row = (node: string, types: ProxySync['types']): ProxySync => ({
  node,
  connection: `c-${node}`,
  kind: 'grpc',
  proxyType: 'grpc',
  api: 'sotw',
  peer: '127.0.0.1:1',
  connectedAt: new Date(0).toISOString(),
  state: 'SYNCED',
  types,
});

test("the agent's own stream is listed as the agent, its proxy types as not subscribed", () => {
  const synced = {
    state: 'SYNCED' as const,
    sentVersion: 'v1',
    sentNonce: '1',
    sentAt: null,
    ackedVersion: 'v1',
    ackedNonce: '1',
    ackedAt: null,
    sinceSentMs: null,
    lastNack: null,
  };
  const lines = statusTable(
    [row('agent/cart.vm1', {}), row('cart-app-1', { CDS: synced, LDS: synced, EDS: synced, RDS: synced })],
    60_000,
  ).split('\n');
  const agent = lines.find((l) => l.startsWith('agent/cart.vm1')) ?? '';
  assert.match(agent, /portolan agent \(own stream\)\s+SotW\s+-\s+-\s+-\s+-\s/);
  assert.match(lines.find((l) => l.startsWith('cart-app-1')) ?? '', /gRPC\s+SotW\s+SYNCED\s+SYNCED/);
});
