// The workload side (`portolan cert`): a key made locally (it never leaves the VM), a first
// certificate with a join token, then renewals at 80% of the lifetime with the current certificate.
// cert-chain.pem, key.pem and root-cert.pem are replaced atomically (write, then rename), so Envoy's
// file-based SDS and gRPC's file_watcher provider never read half a file; the two SDS files Envoy
// reads them through (mesh/workload-certs.ts) are written beside them.
import { existsSync, readFileSync, renameSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Logger } from '../log/logger.js';
import { Backoff, type BackoffOptions } from '../model/backoff.js';
import { CERT_CHAIN_FILE, KEY_FILE, ROOT_CERT_FILE, sdsFiles } from '../mesh/workload-certs.js';
import { requestCertificate } from './ca-client.js';
import { createCsr, sanEntries } from './certificates.js';
import { generateKeyPair, privateKeyPem, type KeyAlgorithm } from './keys.js';
import { tokenIdentity } from './join-tokens.js';
import { splitPem } from './plugin-ca.js';
import { x509 } from './x509.js';

export { CERT_CHAIN_FILE, KEY_FILE, ROOT_CERT_FILE };

export interface AgentOptions {
  readonly caAddress: string;
  /** The trust bundle for first contact (from `portolan ca root`). */
  readonly rootCertFile: string;
  readonly outDir: string;
  readonly token?: string;
  readonly ttlSeconds?: number;
  readonly keyAlgorithm?: KeyAlgorithm;
  readonly logger: Logger;
}

export interface Issued {
  readonly identity: string;
  readonly notAfter: Date;
  /** When the agent renews: 80% of the way from issuance to expiry. */
  readonly renewAt: Date;
}

export class AgentError extends Error {}

/** Gets one certificate: with the current one in outDir when it is still valid, else with the token. */
export async function obtainCertificate(options: AgentOptions, now = new Date()): Promise<Issued> {
  const current = readCurrent(options.outDir, now);
  const identity = current?.identity ?? (options.token ? tokenIdentity(options.token) : undefined);
  if (!identity)
    throw new AgentError(
      `no valid certificate in ${options.outDir} and no --token: cannot authenticate to the CA`,
    );
  // Once we hold a bundle from the CA it supersedes the first-contact root (it follows rotations).
  const bundleFile = join(options.outDir, ROOT_CERT_FILE);
  const rootPem = readFileSync(existsSync(bundleFile) ? bundleFile : options.rootCertFile, 'utf8');
  const keys = await generateKeyPair(options.keyAlgorithm ?? 'ec-p256');
  const result = await requestCertificate({
    address: options.caAddress,
    rootPem,
    csrPem: await createCsr(keys, identity),
    ...(options.ttlSeconds && { ttlSeconds: options.ttlSeconds }),
    ...(current
      ? { current: { certChainPem: current.chainPem, keyPem: current.keyPem } }
      : options.token && { token: options.token }),
  });
  const [leafPem, ...rest] = result.certChain;
  const rootOfChain = rest[rest.length - 1];
  if (!leafPem || !rootOfChain) throw new AgentError('the CA answered with an incomplete certificate chain');
  const leaf = new x509.X509Certificate(leafPem);
  mkdirSync(options.outDir, { recursive: true, mode: 0o700 });
  writeAtomically(join(options.outDir, KEY_FILE), await privateKeyPem(keys.privateKey), 0o600);
  writeAtomically(join(options.outDir, CERT_CHAIN_FILE), [leafPem, ...rest.slice(0, -1)].join('\n'), 0o644);
  writeAtomically(bundleFile, result.trustBundle ?? rootOfChain, 0o644);
  writeSdsFiles(options.outDir);
  const issuedAt = Math.max(now.getTime(), leaf.notBefore.getTime());
  const renewAt = new Date(issuedAt + (leaf.notAfter.getTime() - issuedAt) * 0.8);
  options.logger.info(
    { identity, via: current ? 'certificate' : 'join token', notAfter: leaf.notAfter, renewAt },
    'certificate written',
  );
  return { identity, notAfter: leaf.notAfter, renewAt };
}

/** A failed request is retried after 1 s, doubling to a minute (no jitter, as before). */
const RETRY_BACKOFF: BackoffOptions = { initialMs: 1000, maxMs: 60_000, jitter: 0 };

/** Runs until `signal` aborts: obtain, sleep until renewAt, renew; failures retry with backoff. */
export async function runAgent(options: AgentOptions, signal: AbortSignal): Promise<void> {
  const backoff = new Backoff(RETRY_BACKOFF);
  while (!signal.aborted) {
    let waitMs: number;
    try {
      const issued = await obtainCertificate(options);
      backoff.reset();
      waitMs = Math.max(1000, issued.renewAt.getTime() - Date.now());
    } catch (err) {
      waitMs = backoff.next();
      options.logger.error({ err, retryInMs: waitMs }, 'certificate request failed');
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
  }
}

interface Current {
  readonly identity: string;
  readonly chainPem: string;
  readonly keyPem: string;
}

function readCurrent(outDir: string, now: Date): Current | undefined {
  const chainFile = join(outDir, CERT_CHAIN_FILE);
  const keyFile = join(outDir, KEY_FILE);
  if (!existsSync(chainFile) || !existsSync(keyFile)) return undefined;
  const chainPem = readFileSync(chainFile, 'utf8');
  const leafPem = splitPem(chainPem)[0];
  if (!leafPem) return undefined;
  const leaf = new x509.X509Certificate(leafPem);
  if (leaf.notAfter <= now) return undefined;
  const uri = sanEntries(leaf.extensions).find((s) => s.startsWith('url:'));
  if (!uri) return undefined;
  return { identity: uri.slice(4), chainPem, keyPem: readFileSync(keyFile, 'utf8') };
}

/** Envoy's file-based SDS files naming the PEM files by absolute path; rewritten only when they differ. */
function writeSdsFiles(outDir: string): void {
  for (const [name, content] of Object.entries(sdsFiles(resolve(outDir)))) {
    const path = join(outDir, name);
    const text = `${JSON.stringify(content, null, 2)}\n`;
    if (!existsSync(path) || readFileSync(path, 'utf8') !== text) writeAtomically(path, text, 0o644);
  }
}

function writeAtomically(path: string, content: string, mode: number): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, content.endsWith('\n') ? content : `${content}\n`, { mode });
  renameSync(tmp, path);
}
