// Per stream, the config generation of each response a NACK or ACK can name (xds/server/stream-generations.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StreamGenerations } from '../../../xds/server/stream-generations.js';

const CDS = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';

test('a NACK of the latest response or of an earlier one still out names the generation it was sent at', () => {
  const g = new StreamGenerations();
  g.sent(CDS, '1', 3);
  g.sent(CDS, '2', 4);
  g.sent(CDS, '3', 5);
  assert.equal(g.nacked(CDS, '2'), 4, 'an earlier response still out');
  assert.equal(g.of(CDS)?.sent, 5);
  assert.equal(g.of(CDS)?.nacked, 4);
  assert.equal(g.nacked(CDS, '1'), 5, 'answered (overtaken) already: the last sent');
  assert.equal(g.nacked(CDS, '3'), 5);
  g.acked(CDS, '3');
  assert.equal(g.of(CDS)?.nacked, undefined, 'an ACK ends the NACK in force');
  assert.equal(g.firstSent, 3);
});

test('an ACK forgets the responses before it; at most four per type are kept', () => {
  const g = new StreamGenerations();
  for (let n = 1; n <= 6; n++) g.sent(CDS, String(n), 10 + n);
  assert.equal(g.nacked(CDS, '2'), 16, 'beyond the four kept: the last sent');
  assert.equal(g.nacked(CDS, '3'), 13, 'the oldest of the four kept');
  g.acked(CDS, '5');
  assert.equal(g.nacked(CDS, '4'), 16, 'answered by the ACK of a later one');
  assert.equal(g.nacked(CDS, '6'), 16);
  g.sent(CDS, '7', 20);
  assert.equal(g.nacked(CDS, '7'), 20);
  assert.equal(g.nacked(CDS, 'x'), 20, 'a nonce never sent: the last sent');
  assert.equal(new StreamGenerations().nacked(CDS, '1'), undefined, 'nothing sent of the type');
});
