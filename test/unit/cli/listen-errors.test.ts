// Which admin addresses are loopback (anything else is warned about at start: the admin port has no
// authentication), and how a failed bind is reported.
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { test } from 'node:test';
import { isLoopback, listenFailure } from '../../../cli/listen-errors.js';

test('loopback addresses are the 127/8 range, ::1 and localhost; anything else is not', () => {
  for (const host of ['127.0.0.1', '127.1.2.3', '::1', 'localhost'])
    assert.equal(isLoopback(host), true, host);
  for (const host of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'portolan.internal'])
    assert.equal(isLoopback(host), false, host);
});

test('a bind that failed on an address in use says so, whatever the library said', async (t) => {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const port = (server.address() as AddressInfo).port;
  const err = await listenFailure(
    '--xds-addr',
    { host: '127.0.0.1', port },
    new Error('No address added out of total 1 resolved'),
  );
  assert.equal(err.message, `--xds-addr 127.0.0.1:${port} is already in use`);
  const other = await listenFailure('--http-addr', { host: '127.0.0.1', port: 0 }, new Error('boom'));
  assert.equal(other.message, '--http-addr 127.0.0.1:0: cannot listen: boom');
});
