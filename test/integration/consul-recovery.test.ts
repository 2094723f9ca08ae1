// After a Consul outage, Portolan catches up as soon as Consul answers again, whatever its backoff
// has grown to (issue #45, item 13): with the watches' backoff set to ten minutes, Consul refuses
// connections until every watch has failed and the recovery probe has seen it down, a service
// instance is deregistered meanwhile, and Consul comes back: the deregistration reaches a raw ADS
// client once the probe (every 50 ms here) sees Consul answer — no watch waits out its backoff.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createConsulClient } from '../../adapters/consul/client.js';
import { ConsulRegistry } from '../../adapters/consul/registry.js';
import type { ProbeStats } from '../../adapters/recovery-probe.js';
import { silentLogger } from '../../log/logger.js';
import { ConsulStandin } from '../support/consul-standin.js';
import { eventually } from '../support/eventually.js';
import { startInProcessPlane } from '../support/in-process.js';
import { addresses, clusterOf, TEST_PACING, XdsRecorder } from './consul-support.js';

const WEB = clusterOf('web', 8080);
const TEN_MINUTES = 10 * 60_000;

test('after an outage, a deregistration arrives once Consul answers again, not after the backoff', async (t) => {
  const standin = await ConsulStandin.start();
  t.after(() => standin.stop());
  standin.register({ Name: 'web', ID: 'web-1', Address: '127.0.0.11', Port: 8080 });
  standin.register({ Name: 'web', ID: 'web-2', Address: '127.0.0.12', Port: 8080 });
  const registry = new ConsulRegistry({
    client: createConsulClient({ url: new URL(standin.url), waitMs: 400 }),
    conversion: { domain: 'service.consul', warningHealthy: true, datacenter: 'dc1' },
    logger: silentLogger,
    // The backoff's first step is ten minutes: only the probe can end a failed watch's wait in time.
    pacing: { ...TEST_PACING, backoff: { initialMs: TEN_MINUTES, maxMs: TEN_MINUTES, jitter: 0 } },
    probeIntervalMs: 50,
  });
  const plane = await startInProcessPlane({ extraRegistries: [registry] });
  t.after(() => plane.stop());
  const xds = await XdsRecorder.connect(plane.address, 'consul-recovery', [WEB]);
  t.after(() => xds.close());
  await xds.waitFor(WEB, (e) => e.length === 2);

  const probe = (): ProbeStats => (registry.debug() as { recoveryProbe: ProbeStats }).recoveryProbe;
  await standin.refuseConnections();
  // Every watch (the catalog and web's health) has failed and waits; the probe has seen Consul down.
  await eventually(
    () => {
      assert.equal(registry.status().stale, true);
      const d = registry.debug() as { problemCount: number };
      assert.ok(d.problemCount >= 2, `problems: ${d.problemCount}`);
      assert.ok(probe().failures > 0, 'the probe saw Consul down');
    },
    { timeoutMs: 10_000, what: 'the outage seen by the watches and the probe' },
  );
  standin.deregister('web-2');
  await standin.acceptConnections();

  const after = await xds.waitFor(WEB, (e) => e.length === 1, 20_000);
  assert.deepEqual(addresses(after), ['127.0.0.11']);
  assert.ok(probe().recoveries >= 1);
  await eventually(() => assert.equal(registry.status().stale, false), { timeoutMs: 10_000 });
});
