// The dashboard's static files (built by `npm run build` into dist/ui/), read once into memory at
// start and served by name from that fixed set: no path from a request ever reaches the file system.
// Every asset is Portolan's own (no CDN); the content security policy allows nothing else.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

/** The dashboard is read-only and self-contained: scripts, styles and requests go to this server only. */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

interface Asset {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
}

/** Files larger than this are not dashboard assets (a stray build product); they are skipped. */
const MAX_ASSET_BYTES = 1 << 20;

export class UiAssets {
  private readonly assets = new Map<string, Asset>();
  readonly missing: string;

  constructor(dir: URL) {
    const root = fileURLToPath(dir);
    this.missing = `the dashboard's files are not built (expected in ${root}): run npm run build`;
    let names: string[];
    try {
      names = readdirSync(root, { recursive: true, encoding: 'utf8' });
    } catch {
      return;
    }
    for (const name of names) {
      const type = TYPES[extname(name)];
      const path = join(root, name);
      if (!type || !statSync(path).isFile() || statSync(path).size > MAX_ASSET_BYTES) continue;
      const body = readFileSync(path);
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"`;
      this.assets.set(name.split('\\').join('/'), { body, type, etag });
    }
  }

  get available(): boolean {
    return this.assets.has('index.html');
  }

  /** Every asset's name and size (the dashboard's page weight). */
  sizes(): Record<string, number> {
    return Object.fromEntries([...this.assets].map(([name, a]) => [name, a.body.length]));
  }

  /** Serves `name` ('' is index.html); false when there is no such asset. */
  serve(name: string, req: IncomingMessage, res: ServerResponse): boolean {
    const asset = this.assets.get(name === '' ? 'index.html' : name);
    if (!asset) return false;
    const headers = { ...SECURITY_HEADERS, etag: asset.etag, 'cache-control': 'no-cache' };
    if (req.headers['if-none-match'] === asset.etag) {
      res.writeHead(304, headers);
      res.end();
      return true;
    }
    res.writeHead(200, { ...headers, 'content-type': asset.type, 'content-length': asset.body.length });
    res.end(asset.body);
    return true;
  }
}
