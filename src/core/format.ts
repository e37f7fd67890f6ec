// How numbers read in every sentence and table walcost prints: one place for rounding, thousands
// separators, units and plurals.
import { MB } from './units.js'

const integerFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 })
const oneDecimalFormat = new Intl.NumberFormat('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 })

/** 1,234,567; '-' for an unknown value. */
export const integer = (value: number | null | undefined): string =>
  value === null || value === undefined ? '-' : integerFormat.format(value)

/** 1,234.5; '-' for an unknown value. */
export const oneDecimal = (value: number | null | undefined): string =>
  value === null || value === undefined ? '-' : oneDecimalFormat.format(value)

/**
 * A table's rows as every renderer prints them (text, markdown, HTML, the notebook's): text as it
 * is, numbers with thousands separators, and each column's numbers with one decimal where any of
 * them has a fraction, else none, so that a column's decimals line up.
 */
export function formatColumns(rows: ReadonlyArray<ReadonlyArray<string | number>>): string[][] {
  const width = Math.max(0, ...rows.map((row) => row.length))
  const fractional = Array.from({ length: width }, (_, column) =>
    rows.some((row) => {
      const value = row[column]
      return typeof value === 'number' && !Number.isInteger(value)
    }),
  )
  return rows.map((row) =>
    row.map((value, column) =>
      typeof value === 'number' ? (fractional[column] ? oneDecimal(value) : integer(value)) : value,
    ),
  )
}

/** A value rounded to one decimal, as a number: for tables and charts that format numbers themselves. */
export const roundOne = (value: number): number => Math.round(value * 10) / 10

/** Decimal megabytes: 41.8 MB. */
export const megabytes = (bytes: number): string => `${oneDecimal(bytes / MB)} MB`

/** A share (0..1) as a whole percentage: 59%. */
export const percent = (share: number): string => `${Math.round(share * 100)}%`

/** `part` of `whole` as a whole percentage, '-' when the whole is 0. */
export const shareOf = (part: number, whole: number): string => (whole > 0 ? percent(part / whole) : '-')

/** A count with its noun: 1 row, 2 rows, 1,000 full-page images. */
export const counted = (value: number, singular: string, plural = `${singular}s`): string =>
  `${integer(value)} ${value === 1 ? singular : plural}`

/** A size in the unit that keeps it readable: 812 bytes, 81.2 kB, 41.8 MB (decimal units). */
export const size = (bytes: number): string =>
  bytes < 10_000 ? counted(bytes, 'byte') : bytes < 10 * MB ? `${oneDecimal(bytes / 1000)} kB` : megabytes(bytes)

/** A rate given in MB/s, in the unit that keeps it readable: 17.3 MB/s, 27 kB/s. */
export const perSecond = (megabytesPerSecond: number): string =>
  megabytesPerSecond >= 0.1 ? `${oneDecimal(megabytesPerSecond)} MB/s` : `${integer(megabytesPerSecond * 1000)} kB/s`

/** One decimal, or two significant digits below 0.1 so that small rates do not read as 0: 1.0, 0.0012. */
export const fine = (value: number): string => (value === 0 || value >= 0.1 ? oneDecimal(value) : value.toPrecision(2))

/**
 * Sizes of one table column, all in the unit that `size` would give the largest of them, so that
 * a column reads in one unit: 1,627.6 kB above 7.3 kB, not above 7,276 bytes.
 */
export function sizesInOneUnit(largest: number): (bytes: number) => string {
  if (largest < 10_000) return (bytes) => counted(bytes, 'byte')
  const [divisor, unit] = largest < 10 * MB ? [1000, 'kB'] : [MB, 'MB']
  return (bytes) => `${fine(bytes / divisor)} ${unit}`
}

/** Rates of one table column (bytes a second), all in the unit that `perSecond` would give the largest. */
export function ratesInOneUnit(largestBytesPerSecond: number): (bytesPerSecond: number) => string {
  const [divisor, unit] = largestBytesPerSecond / MB >= 0.1 ? [MB, 'MB/s'] : [1000, 'kB/s']
  return (bytesPerSecond) => `${fine(bytesPerSecond / divisor)} ${unit}`
}
