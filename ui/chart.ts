// A small SVG chart of the last minutes: pushes per interval as bars, and the slowest convergence in
// each interval as a line on its own scale.
import type { PushStatusView } from '../model/admin-api.js';
import { clock, ms } from './format.js';

const SVG = 'http://www.w3.org/2000/svg';
const W = 640;
const H = 150;
const PAD = { left: 34, right: 54, top: 12, bottom: 22 };

function el<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  ...children: (SVGElement | string)[]
): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  for (const c of children) e.append(c);
  return e;
}

export function pushChart(series: PushStatusView['series']): SVGSVGElement {
  const buckets = series.buckets;
  const n = Math.max(buckets.length, 1);
  // An even top, so the middle tick is a whole number of pushes too (not "1, 1, 0" for a top of 1).
  const maxPushes = 2 * Math.ceil(Math.max(1, ...buckets.map((b) => b.pushes)) / 2);
  const maxConv = Math.max(1, ...buckets.map((b) => b.convergenceMaxMs));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const step = plotW / n;
  const x = (i: number): number => PAD.left + i * step;
  const yPushes = (v: number): number => PAD.top + plotH - (v / maxPushes) * plotH;
  const yConv = (v: number): number => PAD.top + plotH - (v / maxConv) * plotH;
  const svg = el('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img' });
  svg.append(
    el(
      'title',
      {},
      `Pushes per ${series.bucketSeconds} s and slowest convergence, last ${Math.round((n * series.bucketSeconds) / 60)} minutes`,
    ),
  );
  for (const f of [0, 0.5, 1]) {
    const y = PAD.top + plotH * (1 - f);
    svg.append(el('line', { x1: PAD.left, x2: W - PAD.right, y1: y, y2: y, class: 'gridline' }));
    svg.append(
      el(
        'text',
        { x: PAD.left - 6, y: y + 4, class: 'axis', 'text-anchor': 'end' },
        String(Math.round(maxPushes * f)),
      ),
    );
    svg.append(el('text', { x: W - PAD.right + 6, y: y + 4, class: 'axis conv' }, ms(maxConv * f)));
  }
  buckets.forEach((b, i) => {
    if (b.pushes === 0) return;
    const y = yPushes(b.pushes);
    const bar = el('rect', {
      x: x(i) + 1,
      y,
      width: Math.max(1, step - 2),
      height: PAD.top + plotH - y,
      class: 'bar',
    });
    bar.append(
      el('title', {}, `${clock(b.at)}: ${b.pushes} push(es), slowest convergence ${ms(b.convergenceMaxMs)}`),
    );
    svg.append(bar);
  });
  const points = buckets
    .map((b, i) => (b.converged > 0 ? `${x(i) + step / 2},${yConv(b.convergenceMaxMs)}` : ''))
    .filter(Boolean);
  if (points.length > 1) svg.append(el('polyline', { points: points.join(' '), class: 'conv-line' }));
  for (const p of points) {
    const [cx = '0', cy = '0'] = p.split(',');
    svg.append(el('circle', { cx, cy, r: 2.5, class: 'conv-dot' }));
  }
  const first = buckets[0];
  if (first) svg.append(el('text', { x: PAD.left, y: H - 6, class: 'axis' }, clock(first.at, false)));
  svg.append(el('text', { x: W - PAD.right, y: H - 6, class: 'axis', 'text-anchor': 'end' }, 'now'));
  return svg;
}
