// --store / PORTOLAN_STORE_URL: a PostgreSQL URL or nothing (SQLite in --data-dir); anything else is
// refused with the reason, and a password never appears in the message.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OptionError } from '../../../adapters/option-values.js';
import { replicaId, STORE_URL_ENV, storeUrl } from '../../../cli/store-options.js';

test('--store takes a postgres:// URL naming a database; the variable is the default; nothing means SQLite', () => {
  const saved = process.env[STORE_URL_ENV];
  try {
    delete process.env[STORE_URL_ENV];
    assert.equal(storeUrl(undefined), undefined);
    const url = 'postgres://portolan@db.internal:5432/portolan?sslmode=verify-full&sslrootcert=/etc/ca.pem';
    assert.equal(storeUrl(url), url);
    assert.equal(storeUrl('postgresql://u@h/db'), 'postgresql://u@h/db');
    process.env[STORE_URL_ENV] = 'postgres://u@h:5432/fromenv';
    assert.equal(storeUrl(undefined), 'postgres://u@h:5432/fromenv');
    assert.equal(storeUrl('postgres://u@h/flag'), 'postgres://u@h/flag', 'the flag wins');
  } finally {
    if (saved === undefined) delete process.env[STORE_URL_ENV];
    else process.env[STORE_URL_ENV] = saved;
  }
});

test('--store refuses other schemes, a URL without a database, and never echoes the password', () => {
  assert.throws(
    () => storeUrl('mysql://u:secret@h/db'),
    (err: unknown) => {
      assert.ok(err instanceof OptionError);
      assert.match(err.message, /only postgres:\/\//);
      assert.doesNotMatch(err.message, /secret/);
      return true;
    },
  );
  assert.throws(() => storeUrl('postgres://u:secret@h:5432'), /name the database/);
  assert.throws(() => storeUrl('not a url'), /not a URL/);
  assert.throws(() => replicaId('a b'), /--replica-id/);
  assert.equal(replicaId('replica-1.east'), 'replica-1.east');
});
