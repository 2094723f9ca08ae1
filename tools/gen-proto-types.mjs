// Generates TypeScript types for the Envoy protos listed in xds/proto/protos.json into xds/generated/
// (gitignored). The runtime serializer ignores misspelled fields; these types catch them at compile time.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const root = join(dirname(require.resolve('@grpc/grpc-js-xds/package.json')), 'deps');
const spec = JSON.parse(readFileSync(new URL('../xds/proto/protos.json', import.meta.url), 'utf8'));
const outDir = new URL('../xds/generated/', import.meta.url).pathname;
const bin = join(
  dirname(require.resolve('@grpc/proto-loader/package.json')),
  'build/bin/proto-loader-gen-types.js',
);

mkdirSync(outDir, { recursive: true });
execFileSync(
  process.execPath,
  [
    bin,
    '--keepCase',
    '--longs=String',
    '--enums=String',
    '--oneofs',
    '--grpcLib=@grpc/grpc-js',
    `--outDir=${outDir}`,
    '--includeDirs',
    ...spec.includeDirs.map((d) => join(root, d)),
    '--',
    ...spec.files,
  ],
  { stdio: ['ignore', 'ignore', 'inherit'] },
);
// The generated files use extensionless relative imports (CommonJS style); they are type-only for us.
writeFileSync(join(outDir, 'package.json'), '{ "type": "commonjs" }\n');
