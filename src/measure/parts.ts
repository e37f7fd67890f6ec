import type { InsertCost, RelationCost } from './result.js'

/** One part of a measurement's WAL: the parts of a measurement add up to its walBytes exactly. */
export interface Part {
  kind: 'heap' | 'index' | 'relation' | 'fpi' | 'other'
  /** 'heap', an index's or another relation's name, 'full-page images' or 'other'. */
  name: string
  /** Record bytes without images (images are the fpi part). */
  bytes: number
  /** Records whose first block is this part's relation; null for images and the rest. */
  records: number | null
}

/** An index or another relation as a part: its record bytes, images left to the fpi part. */
const relationPart =
  (kind: 'index' | 'relation') =>
  (relation: RelationCost & { name: string }): Part => ({
    kind,
    name: relation.name,
    bytes: relation.walBytes - relation.fpiBytes,
    records: relation.records,
  })

/**
 * walBytes split into the table's heap, each index, each other relation the batch wrote, full-page
 * images and the rest; null when the measurement could not split it (attribution 'lsn').
 */
export function partsOf(cost: Pick<InsertCost, 'breakdown' | 'heap' | 'indexes' | 'otherRelations'>): Part[] | null {
  const breakdown = cost.breakdown
  if (!breakdown) return null
  return [
    { kind: 'heap', name: 'heap', bytes: breakdown.heapBytes, records: cost.heap?.records ?? null },
    ...cost.indexes.map(relationPart('index')),
    ...cost.otherRelations.map(relationPart('relation')),
    { kind: 'fpi', name: 'full-page images', bytes: breakdown.fpiBytes, records: null },
    { kind: 'other', name: 'other', bytes: breakdown.otherBytes, records: null },
  ]
}

/** How a part is labelled in human output: an index or another relation says which it is. */
export function partLabel(part: Part): string {
  return part.kind === 'index' ? `index ${part.name}` : part.kind === 'relation' ? `relation ${part.name}` : part.name
}
