// After an API server outage, a Kubernetes list-watch catches up as soon as the server answers again,
// whatever its backoff has grown to (issue #45, item 13): with the backoff set to ten minutes, the
// stand-in API server goes down until the watcher has failed and the recovery probe (GET /version,
// every 50 ms here) has seen it down; a Service is removed meanwhile; once the server is back up,
// the removal arrives without the watcher waiting out its backoff.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseService, type KubeService } from '../../adapters/kubernetes/api.js';
import { KubeHttp } from '../../adapters/kubernetes/client.js';
import { loadClusters } from '../../adapters/kubernetes/kubeconfig.js';
import { DEFAULT_TIMING, ListWatcher } from '../../adapters/kubernetes/list-watcher.js';
import { RecoveryProbe } from '../../adapters/recovery-probe.js';
import { silentLogger } from '../../log/logger.js';
import { eventually } from '../support/eventually.js';
import { KubeApiServerStandin } from '../support/kube-apiserver-standin.js';
import { kubeService } from '../unit/kubernetes/kube-fixtures.js';

const TEN_MINUTES = 10 * 60_000;

test('after an outage, a removed Service is seen once the API server answers again, not after the backoff', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'portolan-kube-recovery-'));
  const standin = await KubeApiServerStandin.start();
  t.after(async () => {
    await standin.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  for (const name of ['a', 'b'])
    standin.apply('services', kubeService('default', name, [{ name: 'http', port: 80 }]));
  const [cluster] = loadClusters([{ path: standin.kubeconfig(dir) }]);
  assert.ok(cluster);
  const http = new KubeHttp(cluster.config);
  const recovery = new RecoveryProbe(async (signal) => {
    await http.getJson('/version', {}, 1000, signal);
  }, 50);
  const watcher = new ListWatcher<KubeService>({
    kind: 'services',
    path: '/api/v1/services',
    http,
    parse: parseService,
    onChange: () => {},
    onHealth: () => {},
    timing: {
      ...DEFAULT_TIMING,
      requestTimeoutMs: 1000,
      backoff: { initialMs: TEN_MINUTES, maxMs: TEN_MINUTES, jitter: 0 },
    },
    logger: silentLogger,
    recovery,
  });
  t.after(async () => {
    recovery.stop();
    await watcher.stop();
  });
  const names = (): string[] => [...watcher.objects().keys()].sort();
  await watcher.start();
  assert.deepEqual(names(), ['default/a', 'default/b']);
  await eventually(() => assert.equal(standin.openWatches('services'), 1), { timeoutMs: 10_000 });

  await standin.down();
  await eventually(
    () => {
      assert.ok(watcher.failing(), 'the watcher failed');
      assert.ok(recovery.stats().failures > 0, 'the probe saw the API server down');
    },
    { timeoutMs: 10_000, what: 'the outage seen by the watcher and the probe' },
  );
  standin.remove('services', 'default', 'b');
  await standin.up();
  await eventually(() => assert.deepEqual(names(), ['default/a']), {
    timeoutMs: 20_000,
    what: 'the removal seen after the outage',
  });
  assert.ok(recovery.stats().recoveries >= 1);
});
