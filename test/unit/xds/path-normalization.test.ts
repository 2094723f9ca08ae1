// Path normalization (issue #45, item 3): every HTTP connection manager Portolan sends Envoy — inbound
// chains under RBAC and jwt_authn, outbound, the HTTP proxy listener, gateways — carries the fields of
// the mesh-wide level (Istio's meshConfig.pathNormalization), so `/./admin`, `//admin`, `/%61dmin`
// and `/public/../admin` reach routing and RBAC as `/admin`. Envoy is not installable here, so the
// behaviour itself is Envoy's; this pins that the fields are on every HCM of the golden meshes, and
// that Envoy's validation rules accept them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  DEFAULT_PATH_NORMALIZATION,
  PATH_NORMALIZATION_LEVELS,
  withMeshSettings,
  type MeshConfig,
  type MeshConfigSource,
  type PathNormalization,
} from '../../../mesh/mesh-config.js';
import { compileServeOptions, SERVE_DEFAULTS } from '../../../cli/options.js';
import { HCM_TYPE } from '../../../xds/generators/envoy/filters.js';
import { decodeAny } from '../../../xds/proto/protos.js';
import { LISTENER, TYPE_URL_PREFIX } from '../../../xds/proto/type-urls.js';
import { validateEncoded } from '../../../xds/validate/pgv-validator.js';
import { goldenCases, type GoldenCase } from '../../golden/cases.js';
import { resourceSet } from '../../golden/resource-set.js';

type Obj = Record<string, unknown>;

interface FoundHcm {
  readonly where: string;
  readonly hcm: Obj;
}

/** Every HCM in the listeners of `c`, with where it is. */
function hcmsOf(c: GoldenCase): FoundHcm[] {
  const out: FoundHcm[] = [];
  for (const r of resourceSet(c).get(LISTENER) ?? []) {
    assert.deepEqual(validateEncoded(LISTENER.slice(TYPE_URL_PREFIX.length), r.value), [], r.name);
    const listener = decodeAny(r.typeUrl, r.value);
    const chains = [
      ...((listener.filter_chains as Obj[] | undefined) ?? []),
      ...(listener.default_filter_chain ? [listener.default_filter_chain as Obj] : []),
    ];
    for (const chain of chains)
      for (const f of (chain.filters as Obj[] | undefined) ?? []) {
        const typed = f.typed_config as Obj | undefined;
        if (typed?.['@type'] === HCM_TYPE)
          out.push({
            where: `${c.name} ${r.name} ${typeof chain.name === 'string' ? chain.name : ''}`,
            hcm: typed,
          });
      }
  }
  return out;
}

function filterNames(hcm: Obj): string[] {
  return ((hcm.http_filters as Obj[] | undefined) ?? []).map((f) => String(f.name));
}

/** The fields a level sets, as decoded (proto3 defaults read as false / the enum's first value). */
function expected(level: PathNormalization): Obj {
  return {
    normalize_path: level !== 'NONE',
    merge_slashes: level === 'MERGE_SLASHES' || level === 'DECODE_AND_MERGE_SLASHES',
    path_with_escaped_slashes_action:
      level === 'DECODE_AND_MERGE_SLASHES' ? 'UNESCAPE_AND_FORWARD' : 'KEEP_UNCHANGED',
  };
}

function actual(hcm: Obj): Obj {
  return {
    // A BoolValue: absent is "unset" (Envoy's default, off), present reads its value.
    normalize_path: hcm.normalize_path ? (hcm.normalize_path as Obj).value === true : 'unset',
    merge_slashes: hcm.merge_slashes ?? false,
    path_with_escaped_slashes_action:
      hcm.path_with_escaped_slashes_action ?? 'IMPLEMENTATION_SPECIFIC_DEFAULT',
  };
}

const envoyCases = goldenCases().filter((c) => c.node.user_agent_name === 'envoy');

test('the golden meshes have HCMs under RBAC and jwt_authn, inbound, outbound and on a gateway', () => {
  const all = envoyCases.flatMap(hcmsOf);
  const names = all.flatMap((h) => filterNames(h.hcm));
  assert.ok(
    names.some((n) => n.startsWith('portolan.authz.')),
    'an HCM with RBAC',
  );
  assert.ok(names.includes('envoy.filters.http.jwt_authn'), 'an HCM with jwt_authn');
  assert.ok(
    envoyCases.some((c) => c.name.includes('gateway') && hcmsOf(c).length > 0),
    'a gateway HCM',
  );
  assert.ok(all.length > 10, `${all.length} HCMs`);
});

test(`by default (${DEFAULT_PATH_NORMALIZATION}) every Envoy HCM normalizes paths and merges slashes`, () => {
  assert.equal(DEFAULT_PATH_NORMALIZATION, 'MERGE_SLASHES');
  for (const c of envoyCases)
    for (const { where, hcm } of hcmsOf(c))
      assert.deepEqual(
        actual(hcm),
        expected('MERGE_SLASHES'),
        `${where} (filters ${filterNames(hcm).join(', ')})`,
      );
});

for (const level of PATH_NORMALIZATION_LEVELS) {
  test(`--path-normalization ${level}: every Envoy HCM carries its fields, and they pass Envoy's rules`, () => {
    for (const c of envoyCases) {
      const source: MeshConfigSource = { meshConfig: () => c.config };
      const config: MeshConfig = withMeshSettings(source, { pathNormalization: level }).meshConfig();
      for (const { where, hcm } of hcmsOf({ ...c, config }))
        assert.deepEqual(actual(hcm), expected(level), where);
    }
  });
}

test('withMeshSettings gives the same object for the same config, and the source as it is without settings', () => {
  let config: MeshConfig = envoyCases[0]!.config;
  const source: MeshConfigSource = { meshConfig: () => config };
  const wrapped = withMeshSettings(source, { pathNormalization: 'BASE' });
  const first = wrapped.meshConfig();
  assert.equal(wrapped.meshConfig(), first, 'same object while the config is the same');
  assert.equal(first.pathNormalization, 'BASE');
  assert.equal(first.generation, config.generation);
  config = { ...config, generation: config.generation + 1 };
  assert.notEqual(wrapped.meshConfig(), first);
  assert.equal(wrapped.meshConfig().generation, config.generation);
  assert.equal(withMeshSettings(source, {}), source);
});

test('--path-normalization takes the four levels (any case), defaults to MERGE_SLASHES, refuses others', () => {
  assert.equal(compileServeOptions({ ...SERVE_DEFAULTS }).pathNormalization, 'MERGE_SLASHES');
  assert.equal(
    compileServeOptions({ ...SERVE_DEFAULTS, pathNormalization: 'base' }).pathNormalization,
    'BASE',
  );
  assert.throws(
    () => compileServeOptions({ ...SERVE_DEFAULTS, pathNormalization: 'SOME' }),
    /--path-normalization: one of NONE, BASE, MERGE_SLASHES, DECODE_AND_MERGE_SLASHES/,
  );
});
