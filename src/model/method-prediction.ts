/** An index's per-row records, as predictIndex returns them for every access method. */
export interface MethodPrediction {
  bytesPerRow: number
  alignedPerRow: number
  recordsPerRow: number
  tupleSize: number
  splitsPerRow: number
  /** Page images logged by design (not because of a checkpoint), bytes per row. */
  imageBytesPerRow: number
  assumptions: string[]
}
