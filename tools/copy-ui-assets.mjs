// Part of `npm run build`: the dashboard's static files (HTML, CSS, icon) go beside the scripts tsc
// compiled from ui/*.ts into dist/ui/, where the admin server serves them from.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const from = 'ui';
const to = join('dist', 'ui');
mkdirSync(to, { recursive: true });
for (const name of readdirSync(from)) {
  if (/\.(html|css|svg)$/.test(name)) copyFileSync(join(from, name), join(to, name));
}
