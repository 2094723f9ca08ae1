// fast-check generators of config-directory files: valid seed resources of every supported kind
// (the repository's examples/ and the rich seeds below), random mutations of them (wrong types,
// empty objects and lists, huge values, unknown keys, deep nesting, null, odd strings), random
// documents built from the field names the seeds use, and multi-document files of those.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { parseAllDocuments, stringify } from 'yaml';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** One resource of each kind with most of its Istio fields set; each loads without an error. */
const SEEDS_YAML = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: seed-se, namespace: default, labels: {app: seed}}
spec:
  hosts: [seed.example.internal, seed2.example.internal]
  addresses: [10.9.0.0/24]
  location: MESH_INTERNAL
  resolution: STATIC
  ports:
    - {name: http, number: 8080, protocol: HTTP, targetPort: 9080}
    - {name: grpc, number: 50051, protocol: GRPC}
  endpoints:
    - {address: 10.9.0.1, ports: {http: 9081}, labels: {version: v1}, locality: eu/west/a, weight: 2, network: n1, serviceAccount: sa}
  exportTo: ["."]
  subjectAltNames: [spiffe://cluster.local/ns/default/sa/seed]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: seed-se-selector}
spec:
  hosts: [selected.example.internal]
  resolution: DNS
  ports: [{name: tcp, number: 7000, protocol: TCP}]
  workloadSelector: {labels: {app: seed}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: seed-we, annotations: {portolan.io/health: DRAINING}}
spec: {address: 10.9.0.2, ports: {tcp: 7001}, labels: {app: seed}, locality: eu/west/b, weight: 3, network: n1, serviceAccount: sa}
---
apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: {name: seed-wg, namespace: prod}
spec:
  metadata: {labels: {app: seed}, annotations: {team: t}}
  template: {ports: {grpc: 50051}, serviceAccount: sa, network: n1, locality: eu/west/a, weight: 3, labels: {tier: b}}
  probe: {initialDelaySeconds: 1, periodSeconds: 2, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 2, httpGet: {port: 8080, path: /healthz, host: h, scheme: HTTP, httpHeaders: [{name: x, value: y}]}}
---
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: seed-vs}
spec:
  hosts: [seed.example.internal]
  gateways: [mesh]
  http:
    - name: main
      match:
        - uri: {prefix: /api}
          headers: {x-user: {exact: a}}
          queryParams: {q: {regex: "v[0-9]+"}}
          method: {exact: GET}
          ignoreUriCase: true
          port: 8080
          sourceLabels: {app: x}
      route:
        - destination: {host: seed.example.internal, subset: v1, port: {number: 8080}}
          weight: 80
          headers: {request: {set: {a: b}, add: {c: d}, remove: [e]}}
        - destination: {host: seed.example.internal, subset: v2}
          weight: 20
      timeout: 1.5s
      retries: {attempts: 3, perTryTimeout: 500ms, retryOn: "5xx,reset"}
      fault: {delay: {fixedDelay: 1s, percentage: {value: 10}}, abort: {httpStatus: 503, percentage: {value: 5}}}
      rewrite: {uri: /v2}
      mirror: {host: mirror.example.internal}
      mirrorPercentage: {value: 10}
      corsPolicy: {allowOrigins: [{exact: "https://a"}], allowMethods: [GET], maxAge: 1m, allowCredentials: true}
      headers: {response: {set: {x: y}}}
    - redirect: {uri: /moved, redirectCode: 301}
      match: [{uri: {exact: /old}}]
    - directResponse: {status: 200, body: {string: ok}}
  tcp:
    - match: [{port: 7000}]
      route: [{destination: {host: seed.example.internal, port: {number: 7000}}}]
---
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: seed-dr}
spec:
  host: seed.example.internal
  trafficPolicy:
    loadBalancer: {simple: ROUND_ROBIN}
    connectionPool: {tcp: {maxConnections: 10, connectTimeout: 1s, tcpKeepalive: {time: 10s, interval: 5s}}, http: {http1MaxPendingRequests: 5, maxRequestsPerConnection: 1}}
    outlierDetection: {consecutive5xxErrors: 5, interval: 10s, baseEjectionTime: 30s, maxEjectionPercent: 50}
    tls: {mode: ISTIO_MUTUAL}
    portLevelSettings:
      - port: {number: 8080}
        loadBalancer: {consistentHash: {httpHeaderName: x-user, minimumRingSize: 1024}}
  subsets:
    - {name: v1, labels: {version: v1}}
    - name: v2
      labels: {version: v2}
      trafficPolicy: {loadBalancer: {localityLbSetting: {enabled: true, distribute: [{from: eu/*, to: {"eu/*": 80, "us/*": 20}}]}}}
---
apiVersion: networking.istio.io/v1
kind: Gateway
metadata: {name: seed-gw}
spec:
  selector: {istio: ingressgateway}
  servers:
    - port: {number: 8081, name: http, protocol: HTTP}
      hosts: [seed.example.com]
    - port: {number: 8443, name: https, protocol: HTTPS}
      hosts: [seed.example.com]
      tls: {mode: SIMPLE, credentialName: seed-cert}
---
apiVersion: networking.istio.io/v1
kind: Sidecar
metadata: {name: seed-sidecar, namespace: shop}
spec:
  workloadSelector: {labels: {app: frontend}}
  egress:
    - port: {number: 443, protocol: TLS, name: tls}
      hosts: [edge/payments.example.com]
    - hosts: [./*, istio-system/*]
  outboundTrafficPolicy: {mode: REGISTRY_ONLY}
---
apiVersion: security.istio.io/v1
kind: PeerAuthentication
metadata: {name: seed-pa}
spec:
  selector: {matchLabels: {app: seed}}
  mtls: {mode: STRICT}
  portLevelMtls: {"8080": {mode: PERMISSIVE}}
---
apiVersion: security.istio.io/v1
kind: AuthorizationPolicy
metadata: {name: seed-ap}
spec:
  selector: {matchLabels: {app: seed}}
  action: ALLOW
  rules:
    - from:
        - source: {principals: [cluster.local/ns/default/sa/a], namespaces: [default], ipBlocks: [10.0.0.0/8], requestPrincipals: ["*"]}
      to:
        - operation: {methods: [GET], paths: [/api/*], ports: ["8080"], hosts: [seed.example.internal]}
      when:
        - {key: request.auth.claims[scope], values: [read]}
---
apiVersion: security.istio.io/v1
kind: RequestAuthentication
metadata: {name: seed-ra}
spec:
  selector: {matchLabels: {app: seed}}
  jwtRules:
    - issuer: https://auth.example.com
      jwksUri: https://auth.example.com/jwks.json
      audiences: [a]
      fromHeaders: [{name: Authorization, prefix: "Bearer "}]
      fromParams: [token]
      outputPayloadToHeader: x-jwt
      forwardOriginalToken: true
`;

function examplesRoot(): string | undefined {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir))
    if (existsSync(join(dir, 'examples', 'config'))) return join(dir, 'examples');
  return undefined;
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? yamlFiles(join(dir, e.name)) : e.name.endsWith('.yaml') ? [join(dir, e.name)] : [],
  );
}

function documentsOf(text: string): Json[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as Json)
    .filter((v) => v !== null && typeof v === 'object' && !Array.isArray(v));
}

/** Every seed resource: the ones above and every resource in the repository's examples/. */
export const SEED_RESOURCES: readonly Json[] = [
  ...documentsOf(SEEDS_YAML),
  ...(() => {
    const root = examplesRoot();
    return root ? yamlFiles(root).flatMap((f) => documentsOf(readFileSync(f, 'utf8'))) : [];
  })(),
];

/** Every object key the seeds use, at any depth: the vocabulary random documents are made of. */
export const FIELD_NAMES: readonly string[] = (() => {
  const names = new Set<string>();
  const walk = (v: Json): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object')
      for (const [k, child] of Object.entries(v)) {
        names.add(k);
        walk(child);
      }
  };
  SEED_RESOURCES.forEach(walk);
  return [...names].sort();
})();

const KIND_VERSIONS: readonly [string, string][] = [
  ...[
    'ServiceEntry',
    'WorkloadEntry',
    'WorkloadGroup',
    'VirtualService',
    'DestinationRule',
    'Gateway',
    'Sidecar',
  ].map((k): [string, string] => [k, 'networking.istio.io/v1']),
  ...['PeerAuthentication', 'AuthorizationPolicy', 'RequestAuthentication'].map((k): [string, string] => [
    k,
    'security.istio.io/v1',
  ]),
];

/** Strings a parser or a validator could trip on. */
export const oddString: fc.Arbitrary<string> = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom(
    '',
    ' ',
    '*',
    '/',
    '\uFFFD\uFFFD',
    '\uD800',
    '\u0000',
    '\u202E',
    'a'.repeat(5000),
    '../..',
    'unix:///',
    '0.0.0.0/0',
    '::',
    '1e400',
    '-1',
    'null',
    '(?=x)',
    '[',
    '\\',
    '%',
    'ñ.example',
    '1.5s',
    '0s',
    '99999999999h',
  ),
);

/** Values of the wrong type, empty, huge, nested deep, or of the kind found nearby. */
export const oddValue: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(
    null,
    true,
    false,
    0,
    -1,
    1.5,
    65536,
    2 ** 53 + 2,
    -0,
    1e308,
    [],
    {},
    [null],
    [{}],
    [[]],
  ),
  fc.double().map((d): Json => d),
  oddString,
  fc.integer().map((n): Json => n),
  fc
    .tuple(fc.oneof(fc.nat(12), fc.constant(64)), fc.constantFrom<Json>('x', 1, null, {}))
    .map(([depth, leaf]): Json => nest(depth, leaf)),
  fc.array(oddString, { maxLength: 3 }),
  fc.dictionary(fc.constantFrom(...FIELD_NAMES), fc.constantFrom<Json>(null, 'x', 1, {}, []), { maxKeys: 3 }),
);

function nest(depth: number, leaf: Json): Json {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { [FIELD_NAMES[i % FIELD_NAMES.length] ?? 'k']: v };
  return v;
}

/** Paths to every node of `value` (the root too). */
function pathsOf(value: Json, at: (string | number)[] = []): (string | number)[][] {
  const out = [at];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...pathsOf(v, [...at, i])));
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...at, k]));
  return out;
}

type Mutation =
  | { op: 'replace'; value: Json }
  | { op: 'graft'; value: Json }
  | { op: 'delete' }
  | { op: 'add-key'; key: string; value: Json }
  | { op: 'wrap' }
  | { op: 'duplicate' };

/** Every node of every seed: grafted elsewhere, a value of the right shape in the wrong place. */
const SEED_NODES: readonly Json[] = SEED_RESOURCES.flatMap((r) => pathsOf(r).map((p) => nodeAt(r, p)));

function nodeAt(root: Json, path: readonly (string | number)[]): Json {
  let v: Json = root;
  for (const segment of path) v = (v as Record<string | number, Json>)[segment] ?? null;
  return v;
}

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: oddValue.map((value): Mutation => ({ op: 'replace', value })) },
  { weight: 3, arbitrary: fc.constantFrom(...SEED_NODES).map((value): Mutation => ({ op: 'graft', value })) },
  { weight: 2, arbitrary: fc.constant<Mutation>({ op: 'delete' }) },
  {
    weight: 2,
    arbitrary: fc
      .record({
        key: fc.oneof(
          fc.constantFrom(...FIELD_NAMES),
          fc.string({ maxLength: 12 }),
          // Keys that mean something to a JavaScript object.
          fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty'),
        ),
        value: oddValue,
      })
      .map(({ key, value }): Mutation => ({ op: 'add-key', key, value })),
  },
  { weight: 1, arbitrary: fc.constant<Mutation>({ op: 'wrap' }) },
  { weight: 1, arbitrary: fc.constant<Mutation>({ op: 'duplicate' }) },
);

function applyMutation(root: Json, path: readonly (string | number)[], m: Mutation): Json {
  const copy = structuredClone(root);
  if (path.length === 0) return m.op === 'replace' ? m.value : copy;
  let parent: Json = copy;
  for (const segment of path.slice(0, -1))
    parent = (parent as Record<string | number, Json>)[segment] ?? null;
  const last = path[path.length - 1] as string | number;
  if (parent === null || typeof parent !== 'object') return copy;
  const container = parent as Record<string | number, Json>;
  const current = container[last] ?? null;
  switch (m.op) {
    case 'replace':
    case 'graft':
      container[last] = structuredClone(m.value);
      break;
    case 'delete':
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete (parent as Record<string, Json>)[last];
      break;
    case 'add-key':
      if (current !== null && typeof current === 'object' && !Array.isArray(current))
        current[m.key] = m.value;
      else container[last] = { [m.key]: m.value };
      break;
    case 'wrap':
      container[last] = [current];
      break;
    case 'duplicate':
      if (Array.isArray(current)) current.push(structuredClone(current[0] ?? null));
      else container[last] = [current, structuredClone(current)];
      break;
  }
  return copy;
}

/** A seed resource with 1..3 random mutations at random places. */
export const mutatedResource: fc.Arbitrary<Json> = fc
  .record({
    seed: fc.constantFrom(...SEED_RESOURCES),
    steps: fc.array(fc.tuple(fc.nat(), mutation), { minLength: 1, maxLength: 3 }),
  })
  .map(({ seed, steps }) => {
    let value = seed;
    for (const [pick, m] of steps) {
      // Mostly inside spec (and metadata): the envelope's own checks are few and come first.
      const all = pathsOf(value);
      const inner = all.filter((p) => p.length >= 2);
      const paths = pick % 8 === 0 || inner.length === 0 ? all : inner;
      value = applyMutation(value, paths[Math.floor(pick / 8) % paths.length] ?? [], m);
    }
    return value;
  });

/** Random trees of the seeds' field names and odd values. */
const randomTree: fc.Arbitrary<Json> = fc.letrec<{ node: Json }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    oddValue,
    fc.dictionary(fc.constantFrom(...FIELD_NAMES), tie('node'), { maxKeys: 5 }),
    fc.array(tie('node'), { maxLength: 3 }),
  ),
})).node;

/** A document of a supported kind whose metadata and spec are random trees. */
export const randomResource: fc.Arbitrary<Json> = fc
  .record({
    kv: fc.constantFrom(...KIND_VERSIONS),
    name: fc.oneof(fc.constant('r'), oddString),
    spec: fc.dictionary(fc.constantFrom(...FIELD_NAMES), randomTree, { maxKeys: 6 }),
  })
  .map(({ kv: [kind, apiVersion], name, spec }): Json => ({ apiVersion, kind, metadata: { name }, spec }));

/** One document: a seed as it is, mutated, random, a List of those, or anything at all. */
export const document: fc.Arbitrary<Json> = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom(...SEED_RESOURCES) },
  { weight: 5, arbitrary: mutatedResource },
  { weight: 3, arbitrary: randomResource },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.oneof(mutatedResource, randomResource), { maxLength: 3 })
      .map((items): Json => ({ apiVersion: 'v1', kind: 'List', items })),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => v as Json) },
);

/** A file's text: 1..4 documents, written as YAML or JSON (a JSON file holds one). */
export const configText: fc.Arbitrary<string> = fc.oneof(
  fc
    .array(document, { minLength: 1, maxLength: 4 })
    .map((docs) => docs.map((d) => stringify(d, { lineWidth: 0 })).join('---\n')),
  document.map((d) => JSON.stringify(d)),
  // Text-level damage: a cut, a stray byte, a tab.
  fc
    .tuple(document, fc.nat(), fc.constantFrom('', '\t', ':', '- ', '"', '\uFFFD', '{', '&a ', '*a', '---\n'))
    .map(([d, at, insert]) => {
      const text = stringify(d, { lineWidth: 0 });
      const i = at % (text.length + 1);
      return text.slice(0, i) + insert + text.slice(i);
    }),
);
