// Loads Envoy's protos from the @grpc/grpc-js-xds package (its deps/ folder) at run time, once.
// The file list lives in xds/proto/protos.json, shared with the type generator (tools/gen-proto-types.mjs).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import protobuf from 'protobufjs';
import { AGENT_PROTO, REGISTRATION_PROTO } from './agent-protos.js';

interface ProtoSpec {
  readonly includeDirs: readonly string[];
  readonly files: readonly string[];
}

const require = createRequire(import.meta.url);

let root: protobuf.Root | undefined;

/** The loaded proto root; throws a clear error if the package is missing a file we need. */
export function protoRoot(): protobuf.Root {
  if (root) return root;
  const depsDir = join(dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');
  const specPath = new URL('../../../xds/proto/protos.json', import.meta.url);
  const spec = JSON.parse(readFileSync(specPath, 'utf8')) as ProtoSpec;
  const includeDirs = spec.includeDirs.map((d) => join(depsDir, d));
  // google/protobuf/descriptor.proto (for validate/annotations) ships with protobufjs, not with grpc-js-xds.
  const protobufjsDir = dirname(require.resolve('protobufjs/package.json'));
  for (const file of spec.files) {
    if (!includeDirs.some((d) => existsSync(join(d, file)))) {
      throw new Error(
        `proto ${file} not found under ${depsDir}: is @grpc/grpc-js-xds installed at the pinned version?`,
      );
    }
  }
  const r = new protobuf.Root();
  r.resolvePath = (_origin, target) => {
    for (const dir of includeDirs) {
      const candidate = join(dir, target);
      if (existsSync(candidate)) return candidate;
    }
    const bundled = join(protobufjsDir, target);
    return existsSync(bundled) ? bundled : target; // else protobufjs's built-in well-known types
  };
  r.loadSync([...spec.files], { keepCase: true });
  protobuf.parse(AGENT_PROTO, r, { keepCase: true });
  protobuf.parse(REGISTRATION_PROTO, r, { keepCase: true });
  r.resolveAll();
  root = r;
  return r;
}

/** Types by full name: protobufjs's lookup splits, joins and concatenates the name on every call. */
const TYPES = new Map<string, protobuf.Type>();

export function messageType(fullName: string): protobuf.Type {
  let type = TYPES.get(fullName);
  if (!type) TYPES.set(fullName, (type = protoRoot().lookupType(fullName)));
  return type;
}

/** Object form used for decoding: snake_case fields, enums and 64-bit ints as strings. */
export const TO_OBJECT: protobuf.IConversionOptions = {
  enums: String,
  longs: String,
  bytes: String,
  defaults: false,
  oneofs: false,
};

/** Decodes a google.protobuf.Any and any Any nested inside it, for human-readable dumps. */
export function decodeAny(typeUrl: string, value: Uint8Array): Record<string, unknown> {
  const type = messageType(typeUrl.slice(typeUrl.lastIndexOf('/') + 1));
  return { '@type': typeUrl, ...expandAnys(type.toObject(type.decode(value), TO_OBJECT)) };
}

function expandAnys(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) out[key] = expandValue(v);
  return out;
}

function expandValue(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(expandValue);
  if (v === null || typeof v !== 'object') return v;
  const obj = v as Record<string, unknown>;
  if (typeof obj.type_url === 'string' && typeof obj.value === 'string' && Object.keys(obj).length === 2) {
    return decodeAny(obj.type_url, Buffer.from(obj.value, 'base64'));
  }
  return expandAnys(obj);
}
