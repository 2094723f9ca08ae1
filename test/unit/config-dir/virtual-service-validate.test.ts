// VirtualService validation beyond the shape: RE2 regexes, unreachable and duplicate matches,
// retry conditions, fault statuses, redirect codes, durations; unknown subsets as warnings.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatIssue, loadConfigFile } from '../../../config-dir/load-file.js';
import type { DestinationRuleResource, VirtualServiceResource } from '../../../mesh/types.js';
import { unknownSubsetWarnings } from '../../../config-dir/validate/unknown-subsets.js';
import { resolveHost } from '../../../mesh/hosts.js';

const HEADER = [
  'apiVersion: networking.istio.io/v1', // 1
  'kind: VirtualService', // 2
  'metadata: {name: echo, namespace: shop}', // 3
  'spec:', // 4
  '  hosts: [echo]', // 5
  '  http:', // 6
];

function errorsOf(lines: string[]): string[] {
  return loadConfigFile('vs.yaml', [...HEADER, ...lines, ''].join('\n')).errors.map((e) =>
    formatIssue('vs.yaml', e),
  );
}

/** Errors and warnings, for the checks where Istio warns (unreachable matches). */
function verdictOf(lines: string[]): { errors: string[]; warnings: string[] } {
  const load = loadConfigFile('vs.yaml', [...HEADER, ...lines, ''].join('\n'));
  return {
    errors: load.errors.map((e) => formatIssue('vs.yaml', e)),
    warnings: load.warnings.map((e) => formatIssue('vs.yaml', e)),
  };
}

test('regexes must be RE2: lookaround, backreferences and possessive quantifiers are refused, with RE2’s reason', () => {
  const errors = errorsOf([
    '    - match:', // 7
    '        - uri: {regex: "/a(?=b)"}', // 8
    '        - headers: {x-user: {regex: "(a)\\\\1"}}', // 9
    '        - queryParams: {q: {regex: "a++"}}', // 10
    '        - uri: {regex: "[a-"}', // 11
    '        - uri: {regex: "/v[0-9]+/(?P<rest>.*)"}', // 12 (valid RE2, not JS)
    '      route: [{destination: {host: echo}}]', // 13
  ]);
  assert.deepEqual(errors, [
    'vs.yaml:8 spec.http[0].match[0].uri.regex: not a valid RE2 regex `/a(?=b)`: invalid perl operator at `(?=`',
    'vs.yaml:9 spec.http[0].match[1].headers.x-user.regex: not a valid RE2 regex `(a)\\1`: invalid escape sequence at `\\1`',
    'vs.yaml:10 spec.http[0].match[2].queryParams.q.regex: not a valid RE2 regex `a++`: bad repetition operator at `++`',
    'vs.yaml:11 spec.http[0].match[3].uri.regex: not a valid RE2 regex `[a-`: missing ]',
  ]);
});

test('a route after a catch-all route can never match: a warning, as Istio warns, and the file loads', () => {
  const verdict = verdictOf([
    '    - match: [{uri: {prefix: /api}}]', // 7
    '      route: [{destination: {host: echo}}]', // 8
    '    - match: [{uri: {prefix: /}}]', // 9
    '      route: [{destination: {host: echo}}]', // 10
    '    - match: [{uri: {prefix: /late}}]', // 11
    '      route: [{destination: {host: echo}}]', // 12
  ]);
  assert.deepEqual(verdict, {
    errors: [],
    warnings: ['vs.yaml:11 spec.http[2]: can never match: http[1] before it matches every request'],
  });
});

test('a catch-all that depends on the proxy (sourceLabels, port) leaves the routes after it reachable', () => {
  const errors = errorsOf([
    '    - match: [{sourceLabels: {app: canary}}]', // 7
    '      route: [{destination: {host: echo, subset: v2}}]', // 8
    '    - match: [{port: 8080}]', // 9
    '      route: [{destination: {host: echo}}]', // 10
    '    - route: [{destination: {host: echo}}]', // 11
  ]);
  assert.deepEqual(errors, []);
});

test('a match identical to an earlier one (names aside, keys in any order) is a warning, as in Istio', () => {
  const verdict = verdictOf([
    '    - match:', // 7
    '        - {name: a, uri: {prefix: /x}, headers: {h: {exact: "1"}}}', // 8
    '      route: [{destination: {host: echo}}]', // 9
    '    - match:', // 10
    '        - {headers: {h: {exact: "1"}}, uri: {prefix: /x}, name: b}', // 11
    '        - {uri: {prefix: /x}}', // 12
    '      route: [{destination: {host: echo}}]', // 13
  ]);
  assert.deepEqual(verdict, {
    errors: [],
    warnings: [
      'vs.yaml:11 spec.http[1].match[0]: identical to http[0].match[0], which comes first: it can never match',
    ],
  });
});

test('retryOn conditions, gRPC statuses, redirect codes and positive durations are checked', () => {
  const errors = errorsOf([
    '    - match: [{uri: {prefix: /a}}]', // 7
    '      retries: {attempts: 2, perTryTimeout: 0s, retryOn: "5xx,unavailable,503,sometimes"}', // 8
    '      fault: {abort: {grpcStatus: NOPE}, delay: {fixedDelay: 2x}}', // 9
    '      route: [{destination: {host: echo}}]', // 10
    '    - match: [{uri: {prefix: /b}}]', // 11
    '      redirect: {uri: /c, redirectCode: 305}', // 12
  ]);
  assert.deepEqual(errors, [
    'vs.yaml:8 spec.http[0].retries.perTryTimeout: must be at least 1ms, got "0s"',
    'vs.yaml:8 spec.http[0].retries.retryOn: unknown retry condition "sometimes": use 5xx, gateway-error, reset, reset-before-request, connect-failure, envoy-ratelimited, retriable-4xx, refused-stream, retriable-status-codes, retriable-headers, http3-post-connect-failure, cancelled, deadline-exceeded, internal, resource-exhausted, unavailable or an HTTP status code',
    'vs.yaml:9 spec.http[0].fault.delay.fixedDelay: must be a duration such as 1.5s or 100ms, got "2x"',
    'vs.yaml:9 spec.http[0].fault.abort.grpcStatus: must be a gRPC status name such as UNAVAILABLE (or its number 0..16), got "NOPE"',
    'vs.yaml:12 spec.http[1].redirect.redirectCode: must be one of 301, 302, 303, 307, 308 (the redirects Envoy can send)',
  ]);
});

test('weights of several destinations must sum to 100 (http and tcp)', () => {
  const errors = errorsOf([
    '    - route:', // 7
    '        - {destination: {host: echo, subset: v1}, weight: 80}', // 8
    '        - {destination: {host: echo, subset: v2}, weight: 30}', // 9
    '  tcp:', // 10
    '    - route:', // 11
    '        - {destination: {host: db}, weight: 50}', // 12
    '        - {destination: {host: db2}}', // 13
  ]);
  assert.deepEqual(errors, [
    'vs.yaml:7 spec.http[0].route: weights must sum to 100 when there are several destinations, got 110',
    'vs.yaml:11 spec.tcp[0].route: weights must sum to 100 when there are several destinations, got 50',
  ]);
});

function vs(spec: VirtualServiceResource['spec'], namespace = 'shop'): VirtualServiceResource {
  const base = {
    apiVersion: 'networking.istio.io/v1',
    labels: {},
    annotations: {},
    file: 'vs.yaml',
    line: 3,
  };
  return { ...base, kind: 'VirtualService', name: 'echo', namespace, spec };
}

function dr(host: string, subsets: string[], namespace = 'shop'): DestinationRuleResource {
  const base = {
    apiVersion: 'networking.istio.io/v1',
    labels: {},
    annotations: {},
    file: 'dr.yaml',
    line: 1,
  };
  const spec = { host, subsets: subsets.map((name) => ({ name, labels: { version: name } })) };
  return { ...base, kind: 'DestinationRule', name: host, namespace, spec };
}

test('a subset no DestinationRule defines is a warning naming the field; one defined anywhere is not', () => {
  const service = vs({
    hosts: ['echo'],
    http: [
      {
        route: [
          { destination: { host: 'echo', subset: 'v1' }, weight: 50 },
          { destination: { host: 'echo', subset: 'v3' }, weight: 50 },
        ],
        mirror: { host: 'other.example.com', subset: 'shadow' },
      },
    ],
  });
  // The short name in the rule resolves in the rule's namespace, as the VirtualService's does.
  const warnings = unknownSubsetWarnings([service], [dr('echo', ['v1', 'v2'])], resolveHost);
  assert.deepEqual(
    warnings.map((w) => [w.resource, w.message]),
    [
      [
        { resource: 'VirtualService/shop/echo', file: 'vs.yaml', line: 3 },
        'spec.http[0].route[1].destination.subset: no DestinationRule for echo.shop.svc.cluster.local defines subset "v3"; its cluster has no endpoints until one does',
      ],
      [
        { resource: 'VirtualService/shop/echo', file: 'vs.yaml', line: 3 },
        'spec.http[0].mirror.subset: no DestinationRule for other.example.com defines subset "shadow"; its cluster has no endpoints until one does',
      ],
    ],
  );
  assert.deepEqual(unknownSubsetWarnings([service], [dr('echo', ['v1'], 'other')], resolveHost).length, 3);
});

test('a file with an error is rejected whole: nothing of it is served', () => {
  const load = loadConfigFile(
    'vs.yaml',
    [
      ...HEADER,
      '    - match: [{uri: {regex: "(?!x)"}}]',
      '      route: [{destination: {host: echo}}]',
      '',
    ].join('\n'),
  );
  assert.equal(load.errors.length, 1);
  assert.deepEqual(load.resources, []);
});
