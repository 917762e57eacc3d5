/**
 * The growth curves of `bench:scale` as one SVG: a small panel per curve, x on a log scale (the points
 * grow tenfold), y from zero to the largest value, each point labelled with its value. A curve measured
 * earlier (`before`, the same title) is drawn beside it in grey, dashed.
 */
export interface Curve {
  readonly title: string;
  readonly xs: readonly number[];
  readonly ys: readonly number[];
}

const PANEL_WIDTH = 300;
const PANEL_HEIGHT = 180;
const MARGIN = 40;

const escapeText = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');

function compact(value: number): string {
  if (value >= 1000) return `${Number((value / 1000).toFixed(1))}k`;
  if (Number.isInteger(value)) return String(value);
  return value >= 10 ? value.toFixed(0) : value.toFixed(2);
}

function panel(curve: Curve, before: Curve | undefined, left: number, top: number): string {
  const width = PANEL_WIDTH - 2 * MARGIN;
  const height = PANEL_HEIGHT - 2 * MARGIN;
  // A point at 0 (no old records) sits one decade left of the smallest other point.
  const smallest = Math.min(...curve.xs.filter((x) => x > 0));
  const logs = curve.xs.map((x) => Math.log10(x > 0 ? x : smallest / 10));
  const [low, high] = [Math.min(...logs), Math.max(...logs)];
  const top_ = Math.max(...curve.ys, ...(before?.ys ?? [])) * 1.15 || 1;
  const at = (index: number, ys: readonly number[]) => ({
    x: left + MARGIN + (high === low ? width / 2 : ((logs[index]! - low) / (high - low)) * width),
    y: top + MARGIN + height - (ys[index]! / top_) * height,
  });
  const points = curve.xs.map((_, index) => at(index, curve.ys));
  const line = points.map((point) => `${point.x.toFixed(1)},${point.y.toFixed(1)}`).join(' ');
  const earlier =
    before === undefined || before.ys.length !== curve.ys.length
      ? ''
      : `<polyline points="${before.ys
          .map((_, index) => at(index, before.ys))
          .map((point) => `${point.x.toFixed(1)},${point.y.toFixed(1)}`)
          .join(' ')}" fill="none" stroke="#999" stroke-width="1.5" stroke-dasharray="4 3"/>` +
        before.ys
          .map((value, index) => {
            const point = at(index, before.ys);
            return `<text x="${(point.x + 4).toFixed(1)}" y="${(point.y + 12).toFixed(1)}" fill="#777">${compact(value)}</text>`;
          })
          .join('');
  const marks = points
    .map(
      (point, index) =>
        `<circle cx="${point.x.toFixed(1)}" cy="${point.y.toFixed(1)}" r="3" fill="#1f6feb"/>` +
        `<text x="${point.x.toFixed(1)}" y="${(point.y - 7).toFixed(1)}" text-anchor="middle">${compact(curve.ys[index]!)}</text>` +
        `<text x="${point.x.toFixed(1)}" y="${top + PANEL_HEIGHT - MARGIN + 14}" text-anchor="middle">${compact(curve.xs[index]!)}</text>`,
    )
    .join('');
  const axis = `<line x1="${left + MARGIN}" y1="${top + PANEL_HEIGHT - MARGIN}" x2="${left + PANEL_WIDTH - MARGIN}" y2="${top + PANEL_HEIGHT - MARGIN}" stroke="#888"/>`;
  const title = `<text x="${left + PANEL_WIDTH / 2}" y="${top + 18}" text-anchor="middle" font-weight="bold">${escapeText(curve.title)}</text>`;
  return `${title}${axis}${earlier}<polyline points="${line}" fill="none" stroke="#1f6feb" stroke-width="2"/>${marks}`;
}

export function renderChart(curves: readonly Curve[], before: readonly Curve[] = []): string {
  const columns = 3;
  const rows = Math.ceil(curves.length / columns);
  const body = curves
    .map((curve, index) =>
      panel(
        curve,
        before.find((earlier) => earlier.title === curve.title),
        (index % columns) * PANEL_WIDTH,
        Math.floor(index / columns) * PANEL_HEIGHT,
      ),
    )
    .join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${columns * PANEL_WIDTH}" height="${rows * PANEL_HEIGHT}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="#fff"/>${before.length > 0 ? `<text x="${columns * PANEL_WIDTH - 10}" y="${rows * PANEL_HEIGHT - 8}" text-anchor="end" fill="#555">blue: now; grey, dashed: before</text>` : ''}
${body}
</svg>
`;
}
