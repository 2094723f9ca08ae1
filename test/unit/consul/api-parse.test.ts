// Consul's answers are checked before use: a malformed one is an error, never a smaller catalog.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  MalformedAnswerError,
  parseCatalogServices,
  parseHealthEntries,
} from '../../../adapters/consul/api.js';

test('catalog/services: name → tags; null tags are no tags; an empty body is no services', () => {
  assert.deepEqual(
    parseCatalogServices({ consul: [], web: ['v1', 'v2'], db: null }),
    new Map([
      ['consul', []],
      ['web', ['v1', 'v2']],
      ['db', []],
    ]),
  );
  assert.equal(parseCatalogServices(undefined).size, 0);
});

test('catalog/services: anything but an object of string lists is rejected', () => {
  assert.throws(() => parseCatalogServices([]), MalformedAnswerError);
  assert.throws(() => parseCatalogServices('x'), MalformedAnswerError);
  assert.throws(() => parseCatalogServices({ web: [1] }), /tags of "web"/);
});

test('health/service: the fields used are read, with Consul defaults for missing optional ones', () => {
  const [entry] = parseHealthEntries('web', [
    {
      Node: { Node: 'n1', Address: '10.0.0.1', Datacenter: 'dc1', Meta: null },
      Service: { ID: 'web-1', Service: 'web', Port: 80, Tags: null },
      Checks: [{ CheckID: 'serfHealth', Status: 'passing', ServiceID: '' }],
    },
  ]);
  assert.deepEqual(entry, {
    Node: { Node: 'n1', Address: '10.0.0.1', Datacenter: 'dc1', Meta: {} },
    Service: {
      ID: 'web-1',
      Service: 'web',
      Tags: [],
      Address: '',
      Meta: {},
      Port: 80,
      Weights: { Passing: 1, Warning: 1 },
    },
    Checks: [{ CheckID: 'serfHealth', Status: 'passing', ServiceID: '' }],
  });
});

test('health/service: malformed answers are rejected with where the problem is', () => {
  const good = {
    Node: { Node: 'n1', Address: '10.0.0.1' },
    Service: { ID: 'web-1', Service: 'web', Port: 80 },
    Checks: [],
  };
  assert.throws(() => parseHealthEntries('web', { not: 'an array' }), /expected a JSON array/);
  assert.throws(() => parseHealthEntries('web', [good, { Node: {} }]), /web\[1\]: expected an object/);
  assert.throws(
    () => parseHealthEntries('web', [{ ...good, Service: { ...good.Service, Port: 'eighty' } }]),
    /Service.Port/,
  );
  assert.throws(
    () => parseHealthEntries('web', [{ ...good, Checks: [{ CheckID: 'x', Status: 'fine' }] }]),
    /unknown status "fine"/,
  );
  assert.throws(
    () => parseHealthEntries('web', [{ ...good, Service: { ...good.Service, Meta: { a: 1 } } }]),
    /Service.Meta.a/,
  );
});
