/**
 * The load report's chart, SVG written by hand: panels of line series sharing one layout, each
 * with a title, axes, ticks, axis labels and a legend. Pure: data in, text out.
 */

export interface Series {
  readonly name: string;
  /** [x, y] in data units, x ascending. */
  readonly points: ReadonlyArray<readonly [number, number]>;
  readonly dashed?: boolean;
}

export interface Panel {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly Series[];
}

const WIDTH = 960;
const PANEL_HEIGHT = 380;
const MARGIN = { left: 70, right: 230, top: 40, bottom: 50 };
const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363"];

export function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&apos;");
}

/** Round tick steps (1, 2, 5 times a power of ten) covering 0..max with about `count` ticks. */
export function ticks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = 0; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  if ((out[out.length - 1] ?? 0) < max) out.push(Number((out.length * step).toPrecision(12)));
  return out;
}

function label(v: number): string {
  if (Math.abs(v) >= 1_000_000) return `${Number((v / 1_000_000).toPrecision(3))}M`;
  if (Math.abs(v) >= 10_000) return `${Number((v / 1_000).toPrecision(3))}k`;
  return String(Number(v.toPrecision(4)));
}

function panel(p: Panel, top: number): string {
  const w = WIDTH - MARGIN.left - MARGIN.right;
  const h = PANEL_HEIGHT - MARGIN.top - MARGIN.bottom;
  const x0 = MARGIN.left;
  const y0 = top + MARGIN.top;
  const all = p.series.flatMap((s) => s.points);
  const xTicks = ticks(Math.max(1, ...all.map(([x]) => x)));
  const yTicks = ticks(Math.max(1, ...all.map(([, y]) => y)));
  const xMax = xTicks[xTicks.length - 1] ?? 1;
  const yMax = yTicks[yTicks.length - 1] ?? 1;
  const sx = (x: number): number => x0 + (x / xMax) * w;
  const sy = (y: number): number => y0 + h - (y / yMax) * h;
  const out: string[] = [];
  out.push(`<g class="panel">`);
  out.push(`<text x="${x0}" y="${top + 24}" font-size="16" font-weight="bold">${escapeXml(p.title)}</text>`);
  for (const t of yTicks) {
    const y = sy(t).toFixed(1);
    out.push(`<line x1="${x0}" y1="${y}" x2="${x0 + w}" y2="${y}" stroke="#e0e0e0"/>`);
    out.push(`<text x="${x0 - 6}" y="${y}" font-size="11" text-anchor="end" dominant-baseline="middle">${escapeXml(label(t))}</text>`);
  }
  for (const t of xTicks) {
    const x = sx(t).toFixed(1);
    out.push(`<line x1="${x}" y1="${y0 + h}" x2="${x}" y2="${y0 + h + 4}" stroke="#333"/>`);
    out.push(`<text x="${x}" y="${y0 + h + 16}" font-size="11" text-anchor="middle">${escapeXml(label(t))}</text>`);
  }
  out.push(`<line x1="${x0}" y1="${y0 + h}" x2="${x0 + w}" y2="${y0 + h}" stroke="#333"/>`);
  out.push(`<line x1="${x0}" y1="${y0}" x2="${x0}" y2="${y0 + h}" stroke="#333"/>`);
  out.push(`<text class="x-label" x="${x0 + w / 2}" y="${y0 + h + 36}" font-size="12" text-anchor="middle">${escapeXml(p.xLabel)}</text>`);
  const ly = y0 + h / 2;
  out.push(`<text class="y-label" x="${x0 - 52}" y="${ly}" font-size="12" text-anchor="middle" transform="rotate(-90 ${x0 - 52} ${ly})">${escapeXml(p.yLabel)}</text>`);
  p.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length] ?? "#000";
    const dash = s.dashed ? ` stroke-dasharray="6 4"` : "";
    if (s.points.length > 0) {
      const d = s.points.map(([x, y], k) => `${k === 0 ? "M" : "L"}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(" ");
      out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="1.6"${dash}><title>${escapeXml(s.name)}</title></path>`);
    }
    const ky = y0 + i * 14;
    const kx = x0 + w + 16;
    out.push(`<line x1="${kx}" y1="${ky}" x2="${kx + 20}" y2="${ky}" stroke="${color}" stroke-width="2"${dash}/>`);
    out.push(`<text x="${kx + 26}" y="${ky}" font-size="11" dominant-baseline="middle">${escapeXml(s.name)}</text>`);
  });
  out.push(`</g>`);
  return out.join("\n");
}

/** An SVG document of the panels stacked, with a title. */
export function chartSvg(title: string, panels: readonly Panel[]): string {
  const height = 30 + panels.length * PANEL_HEIGHT;
  return [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif">`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${WIDTH / 2}" y="22" font-size="18" text-anchor="middle">${escapeXml(title)}</text>`,
    ...panels.map((p, i) => panel(p, 30 + i * PANEL_HEIGHT)),
    `</svg>`,
    "",
  ].join("\n");
}
