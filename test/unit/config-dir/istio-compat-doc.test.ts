// docs/istio-compatibility.md's field table is the Istio API table of the validators, current.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { withFieldTable } from '../../../config-dir/validate/istio-api-doc.js';
import { ISTIO_API } from '../../../config-dir/validate/istio-api.js';

const PAGE = fileURLToPath(new URL('../../../../docs/istio-compatibility.md', import.meta.url));

test('docs/istio-compatibility.md lists every field of istio-api.ts as it is (npm run compat-doc)', () => {
  const page = readFileSync(PAGE, 'utf8');
  assert.equal(page, withFieldTable(page), 'the generated table is stale: run npm run compat-doc');
  for (const [name, message] of Object.entries(ISTIO_API))
    for (const field of Object.keys(message.fields))
      assert.ok(page.includes(`| \`${name}\` | \`${field}\` |`), `${name}.${field}`);
});
