// Catalog entries as resolveTable reads them, for unit tests of code that takes a table's description.
import type { Column } from '../../src/measure/catalog.js'

/** A plain column of `typeName`: no default, no statistics, not unique. */
export const column = (name: string, typeName: string, notNull = true): Column => ({
  name,
  type: typeName,
  typeName,
  notNull,
  serverFilled: false,
  unique: false,
  avgWidth: null,
  attnum: 1,
  length: typeName === 'int8' ? 8 : -1,
  align: 'd',
  nullFraction: 0,
  correlation: null,
  distinct: null,
  identity: '',
  generated: false,
  sequenced: false,
  volatileDefault: false,
})
