// Rewrites the generated field table of docs/istio-compatibility.md from the Istio API table
// (config-dir/validate/istio-api.ts, compiled: run after `npm run build`).
import { readFileSync, writeFileSync } from 'node:fs';
import { withFieldTable } from '../dist/config-dir/validate/istio-api-doc.js';

const page = new URL('../docs/istio-compatibility.md', import.meta.url);
writeFileSync(page, withFieldTable(readFileSync(page, 'utf8')));
