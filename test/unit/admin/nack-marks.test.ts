// NACK marks (/debug/configz `nacks`): a proxy's NACK in force marks the config files its rejected
// resources were built from, narrowed to the resource the message names and to the files changed
// since the proxy last ACKed the type; the mark is gone once a later version is ACKed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  MAX_FILES_PER_NACK,
  nackMarks,
  namesResource,
  type NackOriginSource,
} from '../../../admin/nack-marks.js';
import type { ConfigDebugState } from '../../../config-dir/debug-state.js';
import { EMPTY_KIND_LISTS } from '../../../mesh/config-kinds.js';
import type {
  DestinationRuleResource,
  ServiceEntryResource,
  VirtualServiceResource,
} from '../../../mesh/types.js';
import type { ConfigFileView } from '../../../model/admin-api.js';
import { ReadSet } from '../../../xds/generators/reads.js';
import { CLUSTER, ROUTE } from '../../../xds/proto/type-urls.js';
import { proxyFromNode } from '../../../xds/proxy/proxy.js';
import type { SentOrigin } from '../../../xds/server/nack-origins.js';
import type { StreamView, TypeStatus } from '../../../xds/server/observer.js';

const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T00:01:00.000Z';
const T2 = '2026-01-01T00:02:00.000Z';

const meta = {
  apiVersion: 'networking.istio.io/v1',
  namespace: 'default',
  labels: {},
  annotations: {},
  line: 1,
};
const se = (name: string, host: string, file: string): ServiceEntryResource => ({
  ...meta,
  kind: 'ServiceEntry',
  name,
  file,
  spec: { hosts: [host], ports: [{ number: 80, name: 'http', protocol: 'HTTP' }] },
});
const dr = (name: string, host: string, file: string): DestinationRuleResource => ({
  ...meta,
  kind: 'DestinationRule',
  name,
  file,
  spec: { host },
});
const vs = (name: string, hosts: string[], file: string): VirtualServiceResource => ({
  ...meta,
  kind: 'VirtualService',
  name,
  file,
  spec: { hosts },
});
const file = (path: string, loadedAt: string): ConfigFileView => ({
  path,
  loadedAt,
  checkedAt: loadedAt,
  status: 'ok',
  errors: [],
  warnings: [],
  resources: [],
});

function state(): ConfigDebugState {
  return {
    dir: '/config',
    synced: true,
    files: [
      file('services/a.yaml', T0),
      file('services/b.yaml', T0),
      file('traffic/a-rules.yaml', T2),
      file('traffic/wild.yaml', T0),
    ],
    conflicts: [],
    warnings: [],
    resources: {
      ...EMPTY_KIND_LISTS,
      serviceEntries: [se('a', 'a.mesh', 'services/a.yaml'), se('b', 'b.mesh', 'services/b.yaml')],
      destinationRules: [dr('a', 'a.mesh', 'traffic/a-rules.yaml')],
      virtualServices: [vs('wild', ['*.other'], 'traffic/wild.yaml')],
    },
  };
}

/** What a cluster build of `host` reads: its Service and its rules. */
function clusterReads(host: string): ReadSet {
  const r = new ReadSet();
  r.service(host);
  r.rulesOf(host);
  return r;
}

const PROXY = proxyFromNode({ id: 'rejecter', user_agent_name: 'gRPC Node', user_agent_version: '1.14.0' });

function stream(status: TypeStatus, proxy = PROXY): StreamView {
  return {
    id: 'conn-1',
    peer: '127.0.0.1:1',
    api: 'sotw',
    connectedAt: T0,
    proxy,
    subscription: () => undefined,
    typeStatus: () => [status],
    heldResources: () => [],
  };
}

function source(streams: StreamView[], origins: SentOrigin[]): NackOriginSource {
  return { streamList: () => streams, sentOrigins: () => origins };
}

const ORIGINS: SentOrigin[] = [
  { name: 'outbound|80||a.mesh', reads: clusterReads('a.mesh') },
  { name: 'outbound|80||b.mesh', reads: clusterReads('b.mesh') },
];
const nacked = (message: string, acked?: string): TypeStatus => ({
  typeUrl: CLUSTER,
  sentVersion: 'v2',
  sentNonce: '2',
  sentAt: T2,
  ...(acked && { acked: { version: 'v1', nonce: '1', at: acked } }),
  nack: { version: 'v2', nonce: '2', code: 3, message, at: T2 },
});

test('a NACK naming a cluster marks the files its build read, with node, client, type and message', () => {
  const marks = nackMarks(
    state(),
    source([stream({ ...nacked('cluster outbound|80||a.mesh: bad policy'), nackGeneration: 4 })], ORIGINS),
  );
  assert.deepEqual(
    marks.map((m) => m.file),
    ['services/a.yaml', 'traffic/a-rules.yaml'],
  );
  assert.deepEqual(marks[1], {
    file: 'traffic/a-rules.yaml',
    node: 'rejecter',
    client: 'gRPC Node',
    clientVersion: '1.14.0',
    type: 'CDS',
    name: 'outbound|80||a.mesh',
    message: 'cluster outbound|80||a.mesh: bad policy',
    generation: 4,
  });
});

test('of those files, the ones changed since the last ACK of the type are the cause', () => {
  const marks = nackMarks(state(), source([stream(nacked('cluster outbound|80||a.mesh: bad', T1))], ORIGINS));
  assert.deepEqual(
    marks.map((m) => m.file),
    ['traffic/a-rules.yaml'],
  );
});

test('a message naming no resource marks what every rejected resource read, without a name', () => {
  const marks = nackMarks(state(), source([stream(nacked('something went wrong'))], ORIGINS));
  assert.deepEqual(
    marks.map((m) => [m.file, m.name]),
    [
      ['services/a.yaml', undefined],
      ['services/b.yaml', undefined],
      ['traffic/a-rules.yaml', undefined],
    ],
  );
});

test('a wildcard VirtualService is found by the hosts it matches', () => {
  const origins = [{ name: 'x', reads: clusterReads('c.other') }];
  const marks = nackMarks(state(), source([stream(nacked('bad route'))], origins));
  assert.deepEqual(
    marks.map((m) => m.file),
    ['traffic/wild.yaml'],
  );
});

test('no mark once a later version is ACKed, nor for a stream that never NACKed', () => {
  const later: TypeStatus = {
    ...nacked('cluster outbound|80||a.mesh: bad'),
    sentVersion: 'v3',
    sentNonce: '3',
    acked: { version: 'v3', nonce: '3', at: T2 },
  };
  const fine: TypeStatus = {
    typeUrl: ROUTE,
    sentVersion: 'v1',
    sentNonce: '1',
    acked: { version: 'v1', nonce: '1', at: T1 },
  };
  assert.deepEqual(nackMarks(state(), source([stream(later), stream(fine)], ORIGINS)), []);
});

test('a NACK whose builds read every service lists at most MAX_FILES_PER_NACK files', () => {
  const many = state();
  const entries = Array.from({ length: MAX_FILES_PER_NACK + 10 }, (_, i) =>
    se(`s${i}`, `s${i}.mesh`, `s/${i}.yaml`),
  );
  const big: ConfigDebugState = { ...many, resources: { ...many.resources, serviceEntries: entries } };
  const all = new ReadSet();
  all.allServices = true;
  const marks = nackMarks(big, source([stream(nacked('listener: bad'))], [{ name: 'l', reads: all }]));
  assert.equal(marks.length, MAX_FILES_PER_NACK);
});

test('a resource name is found in a message only as a whole name', () => {
  assert.equal(namesResource('route 8080: bad', '80'), false);
  assert.equal(namesResource('route 80: bad', '80'), true);
  assert.equal(namesResource('cluster outbound|80||a.mesh.x: bad', 'outbound|80||a.mesh'), false);
  assert.equal(namesResource('cluster "outbound|80||a.mesh" rejected', 'outbound|80||a.mesh'), true);
});
