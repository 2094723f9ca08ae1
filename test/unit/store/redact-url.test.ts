// A store URL is printed with every secret masked (#45 item 9): the user part's password and libpq's
// `password` / `sslpassword` parameters, in redactStoreUrl itself, in --store's refusals and in the
// error of a PostgreSQL store that could not be opened.
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { storeUrl } from '../../../cli/store-options.js';
import { PostgresStore } from '../../../store/postgres/postgres-store.js';
import { redactStoreUrl } from '../../../store/redact-url.js';

const SECRET = 'hunter2';

test('the password of the user part and of the password / sslpassword parameters is masked, the rest kept', () => {
  assert.equal(
    redactStoreUrl(
      `postgres://portolan:${SECRET}@db:5432/portolan?sslmode=verify-full&sslrootcert=/etc/ca.pem`,
    ),
    'postgres://portolan:***@db:5432/portolan?sslmode=verify-full&sslrootcert=/etc/ca.pem',
  );
  assert.equal(
    redactStoreUrl(
      `postgres://portolan@db/portolan?password=${SECRET}&sslmode=require&sslpassword=${SECRET}`,
    ),
    'postgres://portolan@db/portolan?password=***&sslmode=require&sslpassword=***',
  );
  // Spelled in other cases, or percent-encoded, it is the same parameter to mask.
  for (const name of ['PASSWORD', 'SslPassword', 'pass%77ord'])
    assert.doesNotMatch(redactStoreUrl(`postgres://u@db/p?${name}=${SECRET}`), new RegExp(SECRET));
  assert.equal(redactStoreUrl('not a url'), '(unparseable store URL)');
});

test('--store refusals never print a secret from the URL', () => {
  for (const url of [
    `mysql://u:${SECRET}@h/db?password=${SECRET}`,
    `postgres://u@h:5432?password=${SECRET}`,
    `postgres://u@h:5432/?sslpassword=${SECRET}`,
  ])
    assert.throws(
      () => storeUrl(url),
      (err: unknown) => {
        assert.ok(err instanceof Error);
        assert.doesNotMatch(err.message, new RegExp(SECRET));
        return true;
      },
    );
});

test('a PostgreSQL store that cannot be opened names its URL without the secrets', async () => {
  const port = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
  const url = `postgres://u:${SECRET}@127.0.0.1:${port}/db?password=${SECRET}&sslpassword=${SECRET}`;
  await assert.rejects(PostgresStore.open({ url, replica: 'r', timeoutMs: 2000 }), (err: unknown) => {
    assert.ok(err instanceof Error);
    assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}/db`));
    assert.doesNotMatch(err.message, new RegExp(SECRET));
    return true;
  });
});
