// The agent's and `portolan cert`'s connection errors say what is wrong and which flag fixes it
// (ca/connection-errors.ts, issue #48), from the texts grpc-js gives for each case (taken from real
// runs: nothing listening, serve's plaintext port, a trust bundle from another CA).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { explainConnectionError } from '../../../ca/connection-errors.js';

const grpcText = (last: string): string =>
  `No connection established. Last error: Error: ${last}. Resolution note: `;

test('nothing listening names --ca-addr and the secure port', () => {
  const m = explainConnectionError(grpcText('connect ECONNREFUSED 127.0.0.1:1'), '127.0.0.1:1');
  assert.match(
    m,
    /^nothing listens at --ca-addr 127\.0\.0\.1:1: is portolan serve running there, with --secure-xds-addr/,
  );
  assert.doesNotMatch(m, /Resolution note/);
});

test("the plaintext port is recognised by OpenSSL's wrong version number", () => {
  const m = explainConnectionError(
    grpcText(
      '80DCC1954E7F0000:error:0A00010B:SSL routines:ssl3_get_record:wrong version number:../deps/openssl/openssl/ssl/record/ssl3_record.c:350:\n',
    ),
    '127.0.0.1:15010',
  );
  assert.match(
    m,
    /--ca-addr 127\.0\.0\.1:15010 does not speak TLS: is it serve's plaintext --xds-addr\? Give --ca-addr the secure port/,
  );
});

test('a trust bundle from another CA points at --root-cert and `portolan ca root`', () => {
  const m = explainConnectionError(grpcText('self-signed certificate in certificate chain'), 'cp:15012');
  assert.match(
    m,
    /trust bundle in --root-cert does not accept: fetch the control plane's with `portolan ca root`/,
  );
  assert.match(m, /\(self-signed certificate in certificate chain\)$/);
});

test('anything else is gRPC text without the empty resolution note', () => {
  assert.equal(explainConnectionError('token already used. Resolution note: ', 'cp:1'), 'token already used');
  assert.equal(explainConnectionError('permission denied', 'cp:1'), 'permission denied');
});
