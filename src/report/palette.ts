// The colours of every chart, in one place: a part (heap, an index, images, the rest) or a limit has
// the same colour in every chart and every renderer (Vega-Lite, toHtmlReport's SVG), whatever else
// the chart draws. Tableau's ten colours.

/** Parts and limits with a colour of their own. */
const NAMED: Record<string, string> = {
  heap: '#4e79a7',
  'record bytes without images': '#4e79a7',
  estimated: '#4e79a7',
  'full-page images': '#e15759',
  'binds first': '#e15759',
  'other relations': '#b07aa1',
  other: '#bab0ac',
  'no relation': '#bab0ac',
  limit: '#bab0ac',
  baseline: '#bab0ac',
  'WAL (not split)': '#9c755f',
  achieved: '#59a14f',
}

/** The rest (each index, each remedy's kind, an audit's verdicts), by their name: the same name, the same colour. */
const BY_NAME = ['#f28e2b', '#59a14f', '#76b7b2', '#edc948', '#ff9da7', '#9c755f', '#b07aa1']

/** A part's colour: its own, or one its name picks (a stable hash), so that it does not follow the order a chart lists parts in. */
export function partColour(part: string): string {
  const named = NAMED[part]
  if (named) return named
  let hash = 0
  for (const char of part) hash = (Math.imul(hash, 31) + (char.codePointAt(0) ?? 0)) | 0
  return BY_NAME[Math.abs(hash) % BY_NAME.length] as string
}

/** A Vega-Lite colour scale for these parts: each its colour, in the order given. */
export function colourScale(parts: string[]): { domain: string[]; range: string[] } {
  return { domain: parts, range: parts.map(partColour) }
}
