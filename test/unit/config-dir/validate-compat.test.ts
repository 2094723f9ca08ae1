// The compatibility corpus (test/compat) through the loader: every real Istio file gets the verdict
// written for it, and every verdict that differs from Istio's says why. The e2e test
// (test/e2e/compat-corpus.test.ts) loads the same files through a running `portolan serve`.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfigFile } from '../../../config-dir/load-file.js';
import { agreesWithIstio, corpus } from '../../support/compat-corpus.js';

test('every corpus file gets its expected verdict, and each difference from Istio is explained', () => {
  const files = corpus();
  assert.ok(files.length >= 100, `the corpus holds ${files.length} files`);
  const wrong: string[] = [];
  for (const { path, text, expected } of files) {
    const load = loadConfigFile(path, text);
    const verdict = load.errors.length > 0 ? 'rejected' : load.warnings.length > 0 ? 'warning' : 'accepted';
    const messages = (verdict === 'rejected' ? load.errors : load.warnings).map(
      (i) => `${i.path}: ${i.message}`,
    );
    if (verdict !== expected.verdict)
      wrong.push(`${path}: ${verdict} (${messages[0] ?? ''}), expected ${expected.verdict}`);
    else if (expected.message && !messages.some((m) => m.includes(expected.message ?? '')))
      wrong.push(
        `${path}: no message with ${JSON.stringify(expected.message)} in ${JSON.stringify(messages)}`,
      );
    if (!agreesWithIstio(expected) && !expected.difference)
      wrong.push(
        `${path}: ${expected.verdict} where Istio says ${expected.istio}, with no difference written`,
      );
  }
  assert.deepEqual(wrong, []);
});
