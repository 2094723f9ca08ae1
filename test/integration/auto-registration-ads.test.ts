// The ADS seams auto-registration hangs on, over real gRPC on loopback: `istio.io/health` requests
// reach the observer on SotW and delta streams and are never answered; the admission check refuses
// an agent's registration on the plaintext port (no verified certificate) with the reason, and
// lets every other stream through.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { wireAutoRegistration } from '../../cli/auto-registration.js';
import { silentLogger } from '../../log/logger.js';
import { HEALTH_INFO, LISTENER } from '../../xds/proto/type-urls.js';
import type { HealthReport } from '../../xds/server/observer.js';
import { clientNode } from './agent-helpers.js';
import { RawAdsClient } from '../support/raw-ads-client.js';
import { RawDeltaClient } from '../support/raw-delta-client.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane } from '../support/in-process.js';

test('health reports reach the observer on SotW and delta streams, unanswered', async (t) => {
  const reports: [string, HealthReport][] = [];
  const plane = await startInProcessPlane({
    observers: [{ healthReported: (s, r) => reports.push([s.proxy?.id ?? '', r]) }],
  });
  t.after(() => plane.stop());
  const sotw = new RawAdsClient(plane.address);
  const delta = new RawDeltaClient(plane.address);
  t.after(() => {
    sotw.close();
    delta.close();
  });
  sotw.send({
    node: clientNode('agent/vm-1'),
    type_url: HEALTH_INFO,
    error_detail: { code: 14, message: 'tcp 10.0.0.7:80: connect ECONNREFUSED' },
  });
  sotw.send({ type_url: HEALTH_INFO });
  delta.send({
    node: clientNode('agent/vm-2'),
    type_url: HEALTH_INFO,
    error_detail: { code: 14, message: '' },
  });
  await eventually(() => reports.length === 3, { timeoutMs: 5000 });
  // Each stream's reports in order; the two streams interleave as they will.
  const byNode = (id: string): HealthReport[] => reports.filter(([n]) => n === id).map(([, r]) => r);
  assert.deepEqual(byNode('agent/vm-1'), [
    { healthy: false, message: 'tcp 10.0.0.7:80: connect ECONNREFUSED' },
    { healthy: true, message: '' },
  ]);
  assert.deepEqual(byNode('agent/vm-2'), [{ healthy: false, message: 'unhealthy' }]);
  await sotw.expectSilence();
  await delta.expectSilence();
});

test('registration on the plaintext port is refused with the reason; other streams are served', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-autoreg-ads-'));
  writeFileSync(
    join(dir, 'group.yaml'),
    'apiVersion: networking.istio.io/v1\nkind: WorkloadGroup\nmetadata: {name: echo-vms, namespace: shop}\nspec: {}\n',
  );
  // The plane's config registry is made by the plane; the wiring is given it once it exists.
  const late: { wired?: ReturnType<typeof wireAutoRegistration> } = {};
  const plane = await startInProcessPlane({
    configDir: dir,
    admission: (stream, proxy) => late.wired?.admission(stream, proxy),
    observers: [
      {
        streamIdentified: (s) => late.wired?.observer.streamIdentified?.(s),
        streamClosed: (s, r) => late.wired?.observer.streamClosed?.(s, r),
      },
    ],
  });
  assert.ok(plane.config);
  const wired = wireAutoRegistration(plane.config, undefined, 1000, silentLogger);
  late.wired = wired;
  t.after(async () => {
    wired.stop();
    await plane.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const agent = new RawAdsClient(plane.address);
  const other = new RawAdsClient(plane.address);
  t.after(() => {
    agent.close();
    other.close();
  });
  agent.send({
    node: clientNode('agent/vm-1', { NAMESPACE: 'shop', AUTO_REGISTER_GROUP: 'echo-vms' }),
    type_url: LISTENER,
  });
  const status = await agent.status();
  assert.equal(status.code, grpc.status.PERMISSION_DENIED);
  assert.match(
    status.details,
    /auto-registration into WorkloadGroup shop\/echo-vms needs a verified workload certificate/,
  );
  assert.deepEqual(wired.registration.list(), []);
  other.send({ node: clientNode('app-1', { NAMESPACE: 'shop' }), type_url: LISTENER });
  assert.ok(await other.next());
});
