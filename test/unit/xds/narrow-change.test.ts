// How far a config change reaches (configChangeReach) and the event a push applies (narrowChange):
// the hosts whose VirtualServices or DestinationRules changed and the kinds read wholesale that
// changed, or everything when the change has a wildcard host, reorders rules or flips fault injection.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EMPTY_MESH_CONFIG, type MeshConfig } from '../../../mesh/mesh-config.js';
import type {
  DestinationRuleResource,
  DestinationRuleSpec,
  VirtualServiceResource,
  VirtualServiceSpec,
} from '../../../mesh/types.js';
import { changeOf, everythingChanged, type ChangeEvent } from '../../../model/change.js';
import { configChangeReach } from '../../../xds/generators/config-scope.js';
import { configScope, narrowChange } from '../../../xds/server/narrow-change.js';

const meta = { apiVersion: 'networking.istio.io/v1', labels: {}, annotations: {}, file: 'f.yaml', line: 1 };

function dr(name: string, spec: DestinationRuleSpec, namespace = 'shop'): DestinationRuleResource {
  return { ...meta, kind: 'DestinationRule', name, namespace, spec };
}

function vs(name: string, spec: VirtualServiceSpec, namespace = 'shop'): VirtualServiceResource {
  return { ...meta, kind: 'VirtualService', name, namespace, spec };
}

function config(parts: Partial<Omit<MeshConfig, 'generation'>>): MeshConfig {
  return { ...EMPTY_MESH_CONFIG, ...parts, generation: 1 };
}

const REVIEWS = dr('reviews', { host: 'reviews', subsets: [{ name: 'v1', labels: { version: 'v1' } }] });
const LEDGER = dr('ledger', { host: 'ledger.bank.internal' });
const ROUTES = vs('web', {
  hosts: ['web.shop.internal', 'api'],
  http: [{ route: [{ destination: { host: 'web.shop.internal' } }] }],
});
const base = config({ destinationRules: [REVIEWS, LEDGER], virtualServices: [ROUTES] });

const sorted = (reach: { readonly hosts: ReadonlySet<string> } | undefined): string[] | undefined =>
  reach && [...reach.hosts].sort();
/** The hosts a change reaches, when it reaches no kind read wholesale. */
const configChangeHosts = (prev: MeshConfig, next: MeshConfig): ReturnType<typeof configChangeReach> => {
  const reach = configChangeReach(prev, next);
  if (reach) assert.equal(reach.kinds.size, 0);
  return reach;
};

test('an edited, added or removed rule reaches its own hosts, short names resolved in its namespace', () => {
  const edited = dr('reviews', { host: 'reviews', subsets: [{ name: 'v2', labels: { version: 'v2' } }] });
  assert.deepEqual(sorted(configChangeHosts(base, config({ ...base, destinationRules: [edited, LEDGER] }))), [
    'reviews.shop.svc.cluster.local',
  ]);
  assert.deepEqual(sorted(configChangeHosts(base, config({ ...base, destinationRules: [REVIEWS] }))), [
    'ledger.bank.internal',
  ]);
  const routed = vs('web', {
    ...ROUTES.spec,
    http: [{ route: [{ destination: { host: 'ledger.bank.internal' } }] }],
  });
  assert.deepEqual(sorted(configChangeHosts(base, config({ ...base, virtualServices: [routed] }))), [
    'api.shop.svc.cluster.local',
    'web.shop.internal',
  ]);
  // A rule that changed host reaches both hosts.
  const moved = dr('ledger', { host: 'vault.bank.internal' });
  assert.deepEqual(sorted(configChangeHosts(base, config({ ...base, destinationRules: [REVIEWS, moved] }))), [
    'ledger.bank.internal',
    'vault.bank.internal',
  ]);
});

test('a rule that only moved to another file or line, or a copy of the same config, reaches nothing', () => {
  const elsewhere = { ...LEDGER, file: 'other.yaml', line: 40 };
  assert.deepEqual(
    sorted(configChangeHosts(base, config({ ...base, destinationRules: [REVIEWS, elsewhere] }))),
    [],
  );
  assert.deepEqual(sorted(configChangeHosts(base, config({ ...base }))), []);
});

test('what cannot be narrowed to hosts reaches everything', () => {
  const cases: [string, MeshConfig][] = [
    [
      'a wildcard host',
      config({ ...base, destinationRules: [REVIEWS, LEDGER, dr('all', { host: '*.bank.internal' })] }),
    ],
    ['rules reordered (precedence among equals)', config({ ...base, destinationRules: [LEDGER, REVIEWS] })],
    ['two rules with one name', config({ ...base, destinationRules: [REVIEWS, LEDGER, LEDGER] })],
    [
      'fault injection switched on (every gRPC listener gains the filter)',
      config({
        ...base,
        virtualServices: [
          vs('web', {
            ...ROUTES.spec,
            http: [
              {
                fault: { abort: { httpStatus: 503, percentage: { value: 1 } } },
                route: [{ destination: { host: 'web.shop.internal' } }],
              },
            ],
          }),
        ],
      }),
    ],
  ];
  for (const [what, next] of cases) assert.equal(configChangeReach(base, next), undefined, what);
});

test('a change of a kind read wholesale is reported as that kind, beside the hosts whose rules changed', () => {
  const sidecar = { ...meta, kind: 'Sidecar' as const, name: 'default', namespace: 'shop', spec: {} };
  const policy = {
    ...meta,
    apiVersion: 'security.istio.io/v1',
    kind: 'AuthorizationPolicy' as const,
    name: 'deny-all',
    namespace: 'shop',
    spec: {},
  };
  const scoped = configChangeReach(base, config({ ...base, sidecars: [sidecar] }));
  assert.deepEqual(scoped && [...scoped.kinds], ['sidecars']);
  assert.deepEqual(sorted(scoped), []);
  const both = configChangeReach(
    base,
    config({ ...base, destinationRules: [REVIEWS], authorizationPolicies: [policy] }),
  );
  assert.deepEqual(both && [...both.kinds], ['authorizationPolicies']);
  assert.deepEqual(sorted(both), ['ledger.bank.internal']);
  // The same policy read from another line of its file is no change.
  const withPolicy = config({ ...base, authorizationPolicies: [policy] });
  const moved = configChangeReach(
    withPolicy,
    config({ ...withPolicy, authorizationPolicies: [{ ...policy, line: 9 }] }),
  );
  assert.equal(moved?.kinds.size, 0);
  // A push carries the kinds to the cache, with its hosts narrowed as for any config change.
  const narrowed = narrowChange(
    changeOf({ endpoints: ['svc.mock.internal'], everything: true }),
    base,
    config({ ...base, sidecars: [sidecar] }),
  );
  assert.equal(configScope(narrowed), 'hosts');
  assert.equal(narrowed.endpointsOnly, false);
  assert.deepEqual([...(narrowed.kinds ?? [])], ['sidecars']);
  assert.deepEqual([...narrowed.hostnames], ['svc.mock.internal']);
});

test('a push narrows a config change to the hosts it reaches, keeping the registries’ hosts merged into it', () => {
  const next = config({ ...base, destinationRules: [REVIEWS] });
  const event: ChangeEvent = changeOf({ endpoints: ['svc.mock.internal'], everything: true });
  const narrowed = narrowChange(event, base, next);
  assert.equal(configScope(narrowed), 'hosts');
  assert.equal(narrowed.endpointsOnly, false);
  assert.deepEqual([...narrowed.hostnames].sort(), ['ledger.bank.internal', 'svc.mock.internal']);
  // A registry's push that picked up a new config (its event not yet in): narrowed all the same.
  const silent = narrowChange(changeOf({ endpoints: ['svc.mock.internal'] }), base, next);
  assert.equal(configScope(silent), 'hosts');
  assert.deepEqual([...silent.hostnames].sort(), ['ledger.bank.internal', 'svc.mock.internal']);
  // ... and that config's own event, arriving after, finds nothing of the config left to do.
  const late = narrowChange(everythingChanged(), next, next);
  assert.equal(configScope(late), 'hosts');
  assert.equal(late.hostnames.size, 0);
  // A change that cannot be narrowed stays one that reaches everything.
  const wide = narrowChange(event, base, config({ ...base, destinationRules: [LEDGER, REVIEWS] }));
  assert.equal(configScope(wide), 'all');
});
