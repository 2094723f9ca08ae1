// Two processes opening one empty store at once (a first `serve` and a `ca root`, say) agree on one
// root: the first root written is the one both hand out, so a bundle printed by one is the bundle
// the other signs under.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { RootStore } from '../../../ca/root-store.js';
import { silentLogger } from '../../../log/logger.js';
import { Store } from '../../../store/store.js';

test('two first starts on one empty store make one root', async (t) => {
  for (let round = 0; round < 20; round++) {
    const dir = mkdtempSync(join(tmpdir(), 'portolan-first-root-'));
    const a = Store.open({ dataDir: dir, logger: silentLogger });
    const b = Store.open({ dataDir: dir, logger: silentLogger });
    t.after(() => {
      a.close();
      b.close();
      rmSync(dir, { recursive: true, force: true });
    });
    // Each opens its roots and reads the bundle it would print, as `portolan ca root` does.
    const firstView = async (store: Store): Promise<string> => {
      const roots = new RootStore(store.ca, undefined);
      await roots.ensure('cluster.local', 'ec-p256');
      return roots.list()[0]?.certPem ?? '';
    };
    const [seenByA, seenByB] = await Promise.all([firstView(a), firstView(b)]);
    const kept = new RootStore(a.ca, undefined).list();
    assert.equal(kept.length, 1);
    assert.equal(seenByA, kept[0]?.certPem, `round ${round}: A handed out the root that was kept`);
    assert.equal(seenByB, kept[0]?.certPem, `round ${round}: B handed out the root that was kept`);
  }
});
