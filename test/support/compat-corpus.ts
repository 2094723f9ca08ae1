// test/compat: real Istio YAML (data, origins in its README) and each file's expected verdict.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Verdict = 'accepted' | 'warning' | 'rejected';

export interface Expectation {
  readonly verdict: Verdict;
  /** A substring of the first error (rejected) or of a warning (warning). */
  readonly message?: string;
  /** Istio's own verdict: `accepted`, or `rejected: ITS MESSAGE`. */
  readonly istio: string;
  /** Why Portolan's verdict differs from Istio's, when it does (a deliberate difference). */
  readonly difference?: string;
}

/** The repository's test/compat: found above this (compiled) file, else from the working directory. */
export function corpusDir(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'test', 'compat', 'expected.json'))) return join(dir, 'test', 'compat');
  }
  return resolve('test', 'compat');
}

export interface CorpusFile {
  /** Relative to test/compat, `/`-separated. */
  readonly path: string;
  readonly text: string;
  readonly expected: Expectation;
}

export function corpus(): CorpusFile[] {
  const root = corpusDir();
  const expected = JSON.parse(readFileSync(join(root, 'expected.json'), 'utf8')) as Record<
    string,
    Expectation
  >;
  const walk = (dir: string): string[] =>
    readdirSync(dir)
      .sort()
      .flatMap((name) => {
        const p = join(dir, name);
        if (statSync(p).isDirectory()) return walk(p);
        return /\.ya?ml$/.test(name) ? [p] : [];
      });
  // istio/: files of github.com/istio/istio; istio-api/: the examples of the Istio API reference;
  // istio.io/: the YAML of the istio.io task pages.
  const sources = ['istio', 'istio-api', 'istio.io'];
  return sources
    .flatMap((source) => walk(join(root, source)))
    .map((file) => {
      const path = relative(root, file).split('\\').join('/');
      const e = expected[path];
      if (!e) throw new Error(`test/compat/expected.json has no verdict for ${path}`);
      return { path, text: readFileSync(file, 'utf8'), expected: e };
    });
}

/** Whether Istio's verdict and Portolan's agree (a warning is Istio's acceptance). */
export function agreesWithIstio(e: Expectation): boolean {
  return e.istio.startsWith('rejected') === (e.verdict === 'rejected');
}
