// The workload certificate directory, written so that the key and the certificate always change
// together. Each certificate goes into a new version directory; one rename of the `..data` symlink
// then switches every file at once (the layout of Kubernetes' atomic secret volumes, which Envoy's
// `watched_directory` is made for):
//
//   OUT/..data -> ..v-2024-05-01T10-00-00-000Z-3fa2c1     (the one atomic step)
//   OUT/..v-…/{cert-chain.pem, key.pem, root-cert.pem}
//   OUT/cert-chain.pem -> ..data/cert-chain.pem            (and key.pem, root-cert.pem)
//   OUT/sds-default.yaml, OUT/sds-rootca.yaml              (Envoy's file-based SDS)
//
// A crash at any point leaves either the old pair or the new one behind `..data` (a half-written
// version directory is never linked, and is removed by the next write). A directory from before
// this layout (plain files) is read as it is, its pair checked, and converted by the next write.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { CERT_CHAIN_FILE, KEY_FILE, ROOT_CERT_FILE, sdsFiles } from '../mesh/workload-certs.js';

export const DATA_LINK = '..data';
const VERSION_PREFIX = '..v-';
const TMP_SUFFIX = '.tmp';
const PAIR_FILES = [CERT_CHAIN_FILE, KEY_FILE, ROOT_CERT_FILE] as const;

/** What a certificate directory holds: the chain (leaf first), the key, the trust bundle. */
export interface WorkloadFiles {
  readonly chainPem: string;
  readonly keyPem: string;
  readonly bundlePem: string;
}

export interface HeldCertificate extends WorkloadFiles {
  /** The leaf's one URI SAN. */
  readonly identity: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly serial: string;
}

export type CertDirState =
  | { readonly kind: 'empty' }
  | { readonly kind: 'held'; readonly cert: HeldCertificate }
  /** Files are there but are not a usable pair (unreadable, mismatched, not a workload certificate). */
  | { readonly kind: 'unusable'; readonly reason: string };

/** Reads the current pair (through `..data`, or the plain files of the old layout) and checks it. */
export function readCertDir(dir: string): CertDirState {
  let base: string;
  try {
    base = existsLink(join(dir, DATA_LINK)) ? resolve(dir, readlinkSync(join(dir, DATA_LINK))) : dir;
  } catch (err) {
    return { kind: 'unusable', reason: `cannot read ${join(dir, DATA_LINK)}: ${(err as Error).message}` };
  }
  const chainFile = join(base, CERT_CHAIN_FILE);
  const keyFile = join(base, KEY_FILE);
  if (base === dir && !existsSync(chainFile) && !existsSync(keyFile)) return { kind: 'empty' };
  let chainPem: string;
  let keyPem: string;
  try {
    chainPem = readFileSync(chainFile, 'utf8');
    keyPem = readFileSync(keyFile, 'utf8');
  } catch (err) {
    return { kind: 'unusable', reason: `cannot read the certificate pair: ${(err as Error).message}` };
  }
  const bundleFile = join(base, ROOT_CERT_FILE);
  const bundlePem = existsSync(bundleFile) ? readFileSync(bundleFile, 'utf8') : '';
  return checkPair({ chainPem, keyPem, bundlePem });
}

/** Whether `files` are a usable pair: a parsable leaf with one URI SAN whose key is `keyPem`. */
export function checkPair(files: WorkloadFiles): CertDirState {
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(files.chainPem);
  } catch (err) {
    return { kind: 'unusable', reason: `${CERT_CHAIN_FILE} is not a certificate: ${(err as Error).message}` };
  }
  try {
    if (!leaf.checkPrivateKey(createPrivateKey(files.keyPem)))
      return {
        kind: 'unusable',
        reason: `${KEY_FILE} is not the key of ${CERT_CHAIN_FILE} (mismatched pair)`,
      };
  } catch (err) {
    return { kind: 'unusable', reason: `${KEY_FILE} is not a private key: ${(err as Error).message}` };
  }
  const uris = (leaf.subjectAltName ?? '')
    .split(', ')
    .filter((s) => s.startsWith('URI:'))
    .map((s) => s.slice(4));
  if (uris.length !== 1 || !uris[0])
    return { kind: 'unusable', reason: `${CERT_CHAIN_FILE} does not carry exactly one URI SAN` };
  return {
    kind: 'held',
    cert: {
      ...files,
      identity: uris[0],
      notBefore: new Date(leaf.validFrom),
      notAfter: new Date(leaf.validTo),
      serial: leaf.serialNumber,
    },
  };
}

/** One step of a write; `writeCertDir` runs them all, tests stop after any to play a crash there. */
export interface WriteStep {
  readonly name: string;
  run(): void;
}

/** The steps that replace the pair in `dir` with `files`, in order. */
export function writeSteps(dir: string, files: WorkloadFiles): WriteStep[] {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const version = `${VERSION_PREFIX}${stamp}-${randomBytes(3).toString('hex')}`;
  const versionDir = join(dir, version);
  let previous: string | undefined;
  return [
    {
      name: 'create the version directory',
      run: () => {
        mkdirSync(dir, { recursive: true, mode: 0o700 });
        previous = existsLink(join(dir, DATA_LINK)) ? readlinkSync(join(dir, DATA_LINK)) : undefined;
        mkdirSync(versionDir, { mode: 0o755 });
      },
    },
    { name: 'write the key', run: () => writeDurably(join(versionDir, KEY_FILE), files.keyPem, 0o600) },
    {
      name: 'write the certificate chain',
      run: () => writeDurably(join(versionDir, CERT_CHAIN_FILE), files.chainPem, 0o644),
    },
    {
      name: 'write the trust bundle',
      run: () => {
        writeDurably(join(versionDir, ROOT_CERT_FILE), files.bundlePem, 0o644);
        syncDir(versionDir);
      },
    },
    { name: 'swap ..data', run: () => replaceLink(dir, DATA_LINK, version) },
    { name: 'link the files', run: () => linkFiles(dir) },
    { name: 'write the SDS files', run: () => writeSdsFiles(dir) },
    {
      name: 'remove old versions',
      run: () => {
        syncDir(dir);
        prune(dir, new Set([version, ...(previous ? [previous] : [])]));
      },
    },
  ];
}

/** Replaces the pair atomically (see the top of this file). */
export function writeCertDir(dir: string, files: WorkloadFiles): void {
  for (const step of writeSteps(dir, files)) step.run();
}

/**
 * Finishes what a crash interrupted: the top-level links and SDS files of the version `..data`
 * names, and no other version directories. A directory without `..data` is left as it is.
 */
export function repairCertDir(dir: string): void {
  if (!existsLink(join(dir, DATA_LINK))) return;
  linkFiles(dir);
  writeSdsFiles(dir);
  prune(dir, new Set([readlinkSync(join(dir, DATA_LINK))]));
}

function existsLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** `dir/name` becomes a symlink to `target`, in one rename (over a file or an older link). */
function replaceLink(dir: string, name: string, target: string): void {
  const path = join(dir, name);
  if (existsLink(path) && readlinkSync(path) === target) return;
  const tmp = `${path}${TMP_SUFFIX}`;
  rmSync(tmp, { force: true });
  symlinkSync(target, tmp);
  renameSync(tmp, path);
}

function linkFiles(dir: string): void {
  for (const file of PAIR_FILES) replaceLink(dir, file, join(DATA_LINK, file));
}

function prune(dir: string, keep: ReadonlySet<string>): void {
  for (const entry of readdirSync(dir)) {
    const stale = entry.startsWith(VERSION_PREFIX) ? !keep.has(entry) : entry.endsWith(TMP_SUFFIX);
    if (stale) rmSync(join(dir, entry), { recursive: true, force: true });
  }
}

function writeDurably(path: string, content: string, mode: number): void {
  const fd = openSync(path, 'w', mode);
  try {
    writeFileSync(fd, content.endsWith('\n') ? content : `${content}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Envoy's file-based SDS files naming the PEM files by absolute path; rewritten only when they differ. */
function writeSdsFiles(dir: string): void {
  for (const [name, content] of Object.entries(sdsFiles(resolve(dir)))) {
    const path = join(dir, name);
    const text = `${JSON.stringify(content, null, 2)}\n`;
    if (existsSync(path) && readFileSync(path, 'utf8') === text) continue;
    const tmp = `${path}${TMP_SUFFIX}`;
    writeDurably(tmp, text, 0o644);
    renameSync(tmp, path);
  }
}
