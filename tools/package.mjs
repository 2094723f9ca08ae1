// `npm run package` (in a built checkout): the Debian package and the tarball a VM fleet installs
// (issue #48, docs/install.md), in dist/pkg/:
//   portolan_<version>-1_amd64.deb           /usr/bin/portolan, the systemd units, /etc/portolan/
//   portolan-<version>-linux-x64.tar.gz      portolan-<version>-linux-x64/bin/portolan, anywhere
// Both carry the same tree (in the .deb as /usr/lib/portolan):
//   bin/portolan      a sh launcher: runtime/node with Portolan's Node flags on app/dist/cli/main.js
//   runtime/node      the Node.js binary this build runs with (no Node needed where it is installed)
//   app/              package.json, the compiled app (dist/ without tests, benchmarks, demo, source
//                     maps), the files it reads at run time (protos, the dashboard's assets) and the
//                     production node_modules with their native addons as built here
// Why the Node binary and not a single executable application: a SEA cannot load the native addons
// (better-sqlite3, fs-ext) from inside itself, and the app reads files beside its modules; the
// binary beside the app is what `npm start` runs, so the package runs what the tests ran.
// Nothing is downloaded: the app is this checkout's, node_modules are the installed ones (npm ls
// --omit=dev lists them from the lockfile's tree). Reproducible: every file's time is the last
// commit's (SOURCE_DATE_EPOCH), names sorted, owners root, gzip without a name or time.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PACKAGING = join(ROOT, 'packaging');
// PORTOLAN_PACKAGE_OUT: another folder (the test's); PORTOLAN_PACKAGE_FAST=1: the same files, less
// compressed (xz -1 and gzip -1 instead of xz -6 and gzip -6: a fifth of the CPU), for the test.
const OUT = process.env.PORTOLAN_PACKAGE_OUT || join(ROOT, 'dist', 'pkg');
const FAST = process.env.PORTOLAN_PACKAGE_FAST === '1';
const started = Date.now();

const phase = (what) => console.log(`${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s  ${what}`);
const run = (cmd, args, opts = {}) => execFileSync(cmd, args, { cwd: ROOT, encoding: 'utf8', ...opts });
const fail = (message) => {
  console.error(`npm run package: ${message}`);
  process.exit(1);
};

if (process.platform !== 'linux' || process.arch !== 'x64')
  fail(`builds linux-x64 only (this is ${process.platform}-${process.arch})`);
if (!existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) fail('no dist/cli/main.js: run `npm run build` first');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const version = pkg.version;
const debVersion = `${version}-1`;
const epoch = Number(process.env.SOURCE_DATE_EPOCH || run('git', ['log', '-1', '--format=%ct']).trim());
const { NODE_FLAGS } = await import(join(ROOT, 'dist', 'cli', 'node-flags.js'));

rmSync(OUT, { recursive: true, force: true });
const debRoot = join(OUT, 'deb');
const tree = join(debRoot, 'usr', 'lib', 'portolan');
const app = join(tree, 'app');

// The compiled app, without what only development uses.
const SKIPPED_DIST = new Set(['test', 'bench', 'demo', 'pkg']);
for (const name of readdirSync(join(ROOT, 'dist'))) {
  if (SKIPPED_DIST.has(name)) continue;
  cpSync(join(ROOT, 'dist', name), join(app, 'dist', name), {
    recursive: true,
    filter: (src) => !src.endsWith('.map'),
  });
}
// Files the app reads beside its modules, at their paths relative to dist/.
for (const file of ['ca/certificate-service.proto', 'xds/proto/protos.json']) {
  mkdirSync(dirname(join(app, file)), { recursive: true });
  copyFileSync(join(ROOT, file), join(app, file));
}
const appPkg = { ...pkg };
delete appPkg.devDependencies;
delete appPkg.scripts;
writeFileSync(join(app, 'package.json'), `${JSON.stringify(appPkg, null, 2)}\n`);

// The production dependencies as installed here, each package folder without its own
// node_modules (nested ones are listed separately) and without build intermediates.
const modules = realpathSync(join(ROOT, 'node_modules'));
const listed = run('npm', ['ls', '--omit=dev', '--all', '--parseable'], { maxBuffer: 1 << 26 })
  .split('\n')
  .filter(Boolean)
  .map((p) => realpathSync(p))
  .filter((p) => p.startsWith(`${modules}/`));
if (!listed.some((p) => p.endsWith('/better-sqlite3')))
  fail('npm ls lists no better-sqlite3: is node_modules installed?');
for (const dir of new Set(listed)) {
  const dest = join(app, 'node_modules', relative(modules, dir));
  cpSync(dir, dest, { recursive: true, filter: (src) => runtimeFile(relative(dir, src)) });
  if (existsSync(join(dir, 'binding.gyp'))) pruneAddon(dest);
}

/**
 * What node never reads of a package: its nested node_modules (copied on their own), TypeScript
 * sources and declarations, source maps, Markdown other than a licence (a quarter of the size).
 */
function runtimeFile(rel) {
  if (/^(node_modules|\.bin)(\/|$)|(^|\/)\.github(\/|$)/.test(rel)) return false;
  const name = rel.split('/').pop() ?? '';
  if (/^licen[cs]e/i.test(name)) return true;
  return !/\.(ts|mts|cts|map|md|markdown)$/i.test(name);
}

/** A native addon's package keeps its JavaScript and build/Release/*.node: not its C sources. */
function pruneAddon(dir) {
  for (const name of ['src', 'deps']) rmSync(join(dir, name), { recursive: true, force: true });
  const build = join(dir, 'build');
  if (!existsSync(join(build, 'Release'))) fail(`${dir}: native addon not built (no build/Release)`);
  for (const name of readdirSync(build))
    if (name !== 'Release') rmSync(join(build, name), { recursive: true, force: true });
  for (const name of readdirSync(join(build, 'Release')))
    if (!name.endsWith('.node')) rmSync(join(build, 'Release', name), { recursive: true, force: true });
}

phase('app and node_modules copied');
// The runtime and the launcher.
mkdirSync(join(tree, 'runtime'), { recursive: true });
copyFileSync(process.execPath, join(tree, 'runtime', 'node'));
chmodSync(join(tree, 'runtime', 'node'), 0o755);
for (const license of ['/usr/share/doc/nodejs/LICENSE', join(dirname(process.execPath), '..', 'LICENSE')])
  if (existsSync(license)) {
    copyFileSync(license, join(tree, 'runtime', 'LICENSE'));
    break;
  }
mkdirSync(join(tree, 'bin'), { recursive: true });
const launcher = readFileSync(join(PACKAGING, 'portolan.sh'), 'utf8').replace(
  '@NODE_FLAGS@',
  NODE_FLAGS.join(' '),
);
writeFileSync(join(tree, 'bin', 'portolan'), launcher, { mode: 0o755 });

// The Debian side: /usr/bin/portolan, the units, /etc/portolan, the docs, DEBIAN/.
const put = (from, to, mode = 0o644) => {
  mkdirSync(dirname(join(debRoot, to)), { recursive: true });
  copyFileSync(join(ROOT, from), join(debRoot, to));
  chmodSync(join(debRoot, to), mode);
};
mkdirSync(join(debRoot, 'usr', 'bin'), { recursive: true });
symlinkSync('../lib/portolan/bin/portolan', join(debRoot, 'usr', 'bin', 'portolan'));
put('packaging/portolan.service', 'lib/systemd/system/portolan.service');
put('packaging/portolan-agent.service', 'lib/systemd/system/portolan-agent.service');
put('packaging/serve.env', 'etc/portolan/serve.env', 0o640);
put('packaging/agent.env.example', 'etc/portolan/agent.env.example');
mkdirSync(join(debRoot, 'etc', 'portolan', 'config.d'), { recursive: true });
put('packaging/debian/copyright', 'usr/share/doc/portolan/copyright');
for (const doc of ['install.md', 'agent.md']) put(`docs/${doc}`, `usr/share/doc/portolan/${doc}`);
for (const script of ['postinst', 'prerm', 'postrm'])
  put(`packaging/debian/${script}`, `DEBIAN/${script}`, 0o755);
put('packaging/debian/conffiles', 'DEBIAN/conffiles');
const installedKiB = Number(
  run('du', ['-sk', '--apparent-size', '--exclude=DEBIAN', debRoot]).split('\t')[0],
);
writeFileSync(
  join(debRoot, 'DEBIAN', 'control'),
  readFileSync(join(PACKAGING, 'debian', 'control'), 'utf8')
    .replace('@VERSION@', debVersion)
    .replace('@INSTALLED_SIZE@', String(installedKiB)),
);

// Same time on every file (lutimes for the one symlink is not in node: its own time is ignored by
// dpkg-deb and tar's --mtime below sets it).
(function touch(path) {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink()) return;
  if (stat.isDirectory()) for (const name of readdirSync(path)) touch(join(path, name));
  utimesSync(path, epoch, epoch);
})(debRoot);

phase('tree ready');
const env = { ...process.env, SOURCE_DATE_EPOCH: String(epoch) };
const deb = join(OUT, `portolan_${debVersion}_amd64.deb`);
run('dpkg-deb', ['--root-owner-group', '-Zxz', `-z${FAST ? 1 : 6}`, '--build', debRoot, deb], {
  env,
  stdio: ['ignore', 'ignore', 'inherit'],
});

phase('.deb built');
const top = `portolan-${version}-linux-x64`;
const tarball = join(OUT, `${top}.tar.gz`);
run(
  'sh',
  [
    '-c',
    'tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$1" --format=gnu ' +
      '--transform "s,^portolan,$2," -C "$3" -cf - portolan | gzip -$5 -n > "$4"',
    'sh',
    String(epoch),
    top,
    join(debRoot, 'usr', 'lib'),
    tarball,
    FAST ? '1' : '6',
  ],
  { env },
);
rmSync(debRoot, { recursive: true, force: true });
phase('tarball built');

const mib = (file) => `${(statSync(file).size / 2 ** 20).toFixed(1)} MiB`;
console.log(`${relative(ROOT, deb)}  ${mib(deb)}`);
console.log(`${relative(ROOT, tarball)}  ${mib(tarball)}`);
console.log(
  `installed: ${(installedKiB / 1024).toFixed(0)} MiB; built in ${((Date.now() - started) / 1000).toFixed(0)} s`,
);
