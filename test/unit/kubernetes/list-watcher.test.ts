// List + watch against the stand-in API server: pagination, watch events, bookmarks, 410 → relist,
// an API server that goes away or hangs → failing with the store kept, then recovery.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { KubeHttp } from '../../../adapters/kubernetes/client.js';
import { loadClusters } from '../../../adapters/kubernetes/kubeconfig.js';
import { parseService, type KubeService } from '../../../adapters/kubernetes/api.js';
import {
  DEFAULT_TIMING,
  ListWatcher,
  type StoreChange,
  type WatchTiming,
} from '../../../adapters/kubernetes/list-watcher.js';
import { silentLogger } from '../../../log/logger.js';
import { Backoff } from '../../../model/backoff.js';
import { eventually } from '../../support/eventually.js';
import { KubeApiServerStandin, type StandinOptions } from '../../support/kube-apiserver-standin.js';
import { kubeService } from './kube-fixtures.js';

const FAST: WatchTiming = {
  ...DEFAULT_TIMING,
  pageSize: 2,
  requestTimeoutMs: 500,
  watchTimeoutSeconds: 60,
  backoff: { initialMs: 20, maxMs: 100, jitter: 0 },
};

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'portolan-kube-lw-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

interface Harness {
  readonly standin: KubeApiServerStandin;
  readonly watcher: ListWatcher<KubeService>;
  readonly changes: StoreChange<KubeService>[][];
  names(): string[];
  stop(): Promise<void>;
}

async function harness(
  seed: number,
  { timing = FAST, standinOptions = {} }: { timing?: WatchTiming; standinOptions?: StandinOptions } = {},
): Promise<Harness> {
  const standin = await KubeApiServerStandin.start(standinOptions);
  for (let i = 0; i < seed; i++)
    standin.apply('services', kubeService('default', `svc-${i}`, [{ name: 'http', port: 80 }]));
  const [cluster] = loadClusters([
    { path: standin.kubeconfig(dir, { file: `${Math.random()}.kubeconfig` }) },
  ]);
  assert.ok(cluster);
  const changes: StoreChange<KubeService>[][] = [];
  const watcher = new ListWatcher<KubeService>({
    kind: 'services',
    path: '/api/v1/services',
    http: new KubeHttp(cluster.config),
    parse: parseService,
    onChange: (c) => changes.push([...c]),
    onHealth: () => {},
    timing,
    logger: silentLogger,
  });
  return {
    standin,
    watcher,
    changes,
    names: () => [...watcher.objects().keys()].sort(),
    async stop() {
      await watcher.stop();
      await standin.stop();
    },
  };
}

const watchRequests = (s: KubeApiServerStandin): Record<string, string>[] =>
  s.requests.filter((r) => r.path === '/api/v1/services' && r.query.watch).map((r) => r.query);
const listRequests = (s: KubeApiServerStandin): Record<string, string>[] =>
  s.requests.filter((r) => r.path === '/api/v1/services' && !r.query.watch).map((r) => r.query);

test('the default backoff: 1 s doubling to 30 s, up to 20 % shorter at random', () => {
  const ceilings = [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000];
  const shortest = new Backoff(DEFAULT_TIMING.backoff, () => 0);
  const longest = new Backoff(DEFAULT_TIMING.backoff, () => 0.999999);
  assert.deepEqual(
    ceilings.map(() => shortest.next()),
    ceilings.map((c) => c * 0.8),
  );
  assert.deepEqual(
    ceilings.map(() => longest.next()),
    ceilings,
  );
});

test('the first list is paginated with limit/continue, then a watch from its resourceVersion asks for bookmarks', async () => {
  const h = await harness(5);
  try {
    await h.watcher.start();
    assert.equal(h.watcher.hasSynced(), true);
    assert.deepEqual(h.names(), [
      'default/svc-0',
      'default/svc-1',
      'default/svc-2',
      'default/svc-3',
      'default/svc-4',
    ]);
    const lists = listRequests(h.standin);
    assert.equal(lists.length, 3, '5 objects in pages of 2');
    assert.equal(lists[0]?.limit, '2');
    assert.ok(lists[1]?.continue && lists[2]?.continue);
    await eventually(() => assert.equal(h.standin.openWatches('services'), 1));
    const [watch] = watchRequests(h.standin);
    assert.equal(watch?.resourceVersion, h.standin.resourceVersion());
    assert.equal(watch?.allowWatchBookmarks, 'true');
    assert.ok(Number(watch?.timeoutSeconds) >= 60 && Number(watch?.timeoutSeconds) < 120);
  } finally {
    await h.stop();
  }
});

test('pages are consistent at the first page’s resourceVersion even if objects change in between', async () => {
  const h = await harness(4, { timing: { ...FAST, pageSize: 1 } });
  try {
    // after the first page: svc-3 is deleted and svc-9 created
    h.standin.onRequest = (r) => {
      if (!r.query.continue) return;
      h.standin.onRequest = undefined;
      h.standin.remove('services', 'default', 'svc-3');
      h.standin.apply('services', kubeService('default', 'svc-9', [{ name: 'http', port: 80 }]));
    };
    await h.watcher.start();
    assert.equal(listRequests(h.standin).length, 4, 'four pages of one');
    const listed = (h.changes[0] ?? []).map((c) => c.key);
    assert.deepEqual(
      listed,
      ['default/svc-0', 'default/svc-1', 'default/svc-2', 'default/svc-3'],
      'the list is the state at its first page',
    );
    // then the watch from the list's version replays the delete and the add
    await eventually(() =>
      assert.deepEqual(h.names(), ['default/svc-0', 'default/svc-1', 'default/svc-2', 'default/svc-9']),
    );
  } finally {
    await h.stop();
  }
});

test('ADDED, MODIFIED and DELETED events update the store and advance the resourceVersion', async () => {
  const h = await harness(1);
  try {
    await h.watcher.start();
    await eventually(() => assert.equal(h.standin.openWatches('services'), 1));
    h.changes.length = 0;
    h.standin.apply('services', kubeService('default', 'new', [{ name: 'grpc', port: 7070 }]));
    await eventually(() => assert.ok(h.watcher.objects().has('default/new')));
    h.standin.apply('services', kubeService('default', 'new', [{ name: 'grpc', port: 7071 }]));
    await eventually(() => assert.equal(h.watcher.objects().get('default/new')?.ports[0]?.port, 7071));
    h.standin.remove('services', 'default', 'svc-0');
    await eventually(() => assert.deepEqual(h.names(), ['default/new']));
    assert.equal(h.watcher.debug().resourceVersion, h.standin.resourceVersion());
    assert.deepEqual(
      h.changes.map((batch) => batch.map((c) => [c.key, c.before !== undefined, c.after !== undefined])),
      [[['default/new', false, true]], [['default/new', true, true]], [['default/svc-0', true, false]]],
    );
    // a MODIFIED that changes nothing the registry reads is not a change
    h.standin.apply('services', {
      ...kubeService('default', 'new', [{ name: 'grpc', port: 7071 }]),
      status: { x: 1 },
    });
    await eventually(() => assert.equal(h.watcher.debug().resourceVersion, h.standin.resourceVersion()));
    assert.equal(h.changes.length, 3);
    assert.equal(h.watcher.debug().events, 4);
  } finally {
    await h.stop();
  }
});

test('a BOOKMARK advances the resourceVersion without changing the store, and the next watch starts there', async () => {
  const h = await harness(2);
  try {
    await h.watcher.start();
    await eventually(() => assert.equal(h.standin.openWatches('services'), 1));
    // writes to another kind move the global resourceVersion past what this watch has seen
    h.standin.apply('nodes', { metadata: { name: 'n1' } });
    h.standin.apply('nodes', { metadata: { name: 'n2' } });
    const before = h.watcher.debug().resourceVersion;
    assert.notEqual(before, h.standin.resourceVersion());
    h.changes.length = 0;
    assert.equal(h.standin.bookmark(), 1);
    await eventually(() => assert.equal(h.watcher.debug().resourceVersion, h.standin.resourceVersion()));
    assert.equal(h.watcher.debug().bookmarks, 1);
    assert.deepEqual(h.changes, []);
    // the server ends the watch (its timeout); the next one resumes from the bookmark, without a list
    const listsBefore = listRequests(h.standin).length;
    h.standin.endWatches();
    await eventually(() => assert.equal(watchRequests(h.standin).length, 2));
    assert.equal(watchRequests(h.standin)[1]?.resourceVersion, h.standin.resourceVersion());
    assert.equal(listRequests(h.standin).length, listsBefore);
  } finally {
    await h.stop();
  }
});

for (const goneAs of ['event', 'http'] as const) {
  test(`410 Gone (${goneAs === 'event' ? 'an ERROR event' : 'HTTP 410'} on the watch) → relist, and only real differences surface`, async () => {
    const h = await harness(3, { standinOptions: { goneAs } });
    try {
      await h.watcher.start();
      await eventually(() => assert.equal(h.standin.openWatches('services'), 1));
      // while no watch is open, svc-2 goes and svc-7 comes, and the history is compacted
      await h.standin.down();
      h.standin.remove('services', 'default', 'svc-2');
      h.standin.apply('services', kubeService('default', 'svc-7', [{ name: 'http', port: 80 }]));
      h.standin.compact();
      h.changes.length = 0;
      await h.standin.up();
      await eventually(() =>
        assert.deepEqual(h.names(), ['default/svc-0', 'default/svc-1', 'default/svc-7']),
      );
      assert.equal(h.watcher.debug().relistsAfterGone, 1);
      assert.equal(h.watcher.debug().lists, 2);
      assert.equal(h.watcher.failing(), undefined);
      const changed = h.changes
        .flat()
        .map((c) => c.key)
        .sort();
      assert.deepEqual(changed, ['default/svc-2', 'default/svc-7'], 'unchanged objects are not reported');
      await eventually(() => assert.equal(h.standin.openWatches('services'), 1));
    } finally {
      await h.stop();
    }
  });
}

test('an ERROR 410 on an open watch (the watch cache fell behind) → relist', async () => {
  const h = await harness(1);
  try {
    await h.watcher.start();
    await eventually(() => assert.equal(h.standin.openWatches('services'), 1));
    h.standin.expireWatches();
    await eventually(() => assert.equal(h.watcher.debug().lists, 2));
    assert.equal(h.watcher.debug().relistsAfterGone, 1);
    assert.deepEqual(h.names(), ['default/svc-0']);
  } finally {
    await h.stop();
  }
});

test('an expired continue token (410 on a list page) restarts the list from the first page', async () => {
  const h = await harness(4, { timing: { ...FAST, pageSize: 1 } });
  try {
    h.standin.onRequest = (r) => {
      if (!r.query.continue) return;
      h.standin.onRequest = undefined;
      h.standin.apply('services', kubeService('default', 'svc-9', [{ name: 'http', port: 80 }]));
      h.standin.compact();
    };
    await h.watcher.start();
    const lists = listRequests(h.standin);
    assert.deepEqual(
      lists.map((q) => (q.continue ? 'continue' : 'first')),
      ['first', 'continue', 'first', 'continue', 'continue', 'continue', 'continue'],
      'the expired page, then a whole new list of five',
    );
    assert.equal(h.watcher.debug().relistsAfterGone, 1);
    assert.deepEqual(h.names(), [
      'default/svc-0',
      'default/svc-1',
      'default/svc-2',
      'default/svc-3',
      'default/svc-9',
    ]);
  } finally {
    await h.stop();
  }
});

test('an object that cannot be read keeps its last good version and is listed as invalid, also across a relist', async () => {
  const h = await harness(1);
  try {
    await h.watcher.start();
    await eventually(() => assert.equal(h.standin.openWatches('services'), 1));
    h.standin.apply('services', kubeService('default', 'svc-0', [{ name: 'http', port: 70000 }]));
    h.standin.apply('services', kubeService('default', 'broken', [{ name: 'http', port: 0 }]));
    await eventually(() => assert.equal(h.watcher.debug().resourceVersion, h.standin.resourceVersion()));
    const expectInvalid = (): void => {
      assert.deepEqual(Object.keys(h.watcher.debug().invalid).sort(), ['default/broken', 'default/svc-0']);
      assert.match(h.watcher.debug().invalid['default/svc-0'] ?? '', /spec\.ports\[0\]\.port/);
      assert.deepEqual(h.names(), ['default/svc-0'], 'the broken one never had a good version');
      assert.equal(h.watcher.objects().get('default/svc-0')?.ports[0]?.port, 80, 'the last good version');
    };
    expectInvalid();
    h.standin.expireWatches();
    await eventually(() => assert.equal(h.watcher.debug().lists, 2));
    expectInvalid();
    h.standin.remove('services', 'default', 'broken');
    h.standin.apply('services', kubeService('default', 'svc-0', [{ name: 'http', port: 81 }]));
    await eventually(() => assert.deepEqual(h.watcher.debug().invalid, {}));
    assert.equal(h.watcher.objects().get('default/svc-0')?.ports[0]?.port, 81);
  } finally {
    await h.stop();
  }
});

test('API server down: failing, the store kept, backoff retries; back up: recovered without losing anything', async () => {
  const h = await harness(2);
  try {
    await h.watcher.start();
    await eventually(() => assert.equal(h.standin.openWatches('services'), 1));
    await h.standin.down();
    await eventually(() =>
      assert.match(h.watcher.failing()?.message ?? '', /services: .*(ECONNREFUSED|connection lost)/),
    );
    assert.deepEqual(h.names(), ['default/svc-0', 'default/svc-1'], 'the last good objects stay');
    const attempts = h.standin.requests.length;
    await h.standin.up();
    await eventually(() => assert.equal(h.watcher.failing(), undefined));
    assert.ok(h.standin.requests.length > attempts);
    h.standin.apply('services', kubeService('default', 'after', [{ name: 'http', port: 80 }]));
    await eventually(() => assert.ok(h.watcher.objects().has('default/after')));
    assert.equal(h.watcher.debug().lists, 1, 'resumed the watch from its resourceVersion, no relist needed');
  } finally {
    await h.stop();
  }
});

test('an API server that accepts and never answers fails the request after its timeout, then recovers', async () => {
  const h = await harness(1);
  try {
    h.standin.hang = true;
    const started = Date.now();
    await h.watcher.start();
    assert.ok(Date.now() - started >= FAST.requestTimeoutMs - 50, 'the first list waited for its timeout');
    assert.match(h.watcher.failing()?.message ?? '', /timed out/);
    assert.equal(h.watcher.hasSynced(), false);
    h.standin.hang = false;
    await eventually(() => assert.equal(h.watcher.hasSynced(), true));
    assert.deepEqual(h.names(), ['default/svc-0']);
  } finally {
    await h.stop();
  }
});

test('a watch still open well past its timeoutSeconds is replaced, from the same resourceVersion', async () => {
  const h = await harness(1, { timing: { ...FAST, watchTimeoutSeconds: 1, watchGraceMs: 200 } });
  try {
    h.standin.honourWatchTimeouts = false;
    await h.watcher.start();
    await eventually(() => assert.equal(watchRequests(h.standin).length, 1));
    // timeoutSeconds is drawn from [1, 2); the watchdog fires 200 ms after it
    await eventually(() => assert.equal(watchRequests(h.standin).length, 2), { timeoutMs: 4000 });
    await eventually(() => assert.equal(h.standin.openWatches('services'), 1), { timeoutMs: 1000 });
    assert.equal(h.watcher.failing(), undefined, 'a replaced watch is not a failure');
    assert.equal(watchRequests(h.standin)[1]?.resourceVersion, h.watcher.debug().resourceVersion);
    assert.equal(h.watcher.debug().lists, 1);
  } finally {
    await h.stop();
  }
});

test('an optional kind the server refuses (403/404) counts as synced and empty', async () => {
  const standin = await KubeApiServerStandin.start();
  const [cluster] = loadClusters([{ path: standin.kubeconfig(dir, { file: 'optional.kubeconfig' }) }]);
  assert.ok(cluster);
  const watcher = new ListWatcher({
    kind: 'widgets',
    path: '/api/v1/widgets',
    http: new KubeHttp(cluster.config),
    parse: (raw) => raw,
    onChange: () => {},
    onHealth: () => {},
    optional: true,
    timing: FAST,
    logger: silentLogger,
  });
  try {
    await watcher.start();
    assert.equal(watcher.hasSynced(), true);
    assert.equal(watcher.failing(), undefined);
    assert.match(watcher.debug().unavailable ?? '', /404/);
  } finally {
    await watcher.stop();
    await standin.stop();
  }
});
