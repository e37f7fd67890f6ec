import type { ColumnLayout } from './layout.js'

type TypeLayout = Pick<ColumnLayout, 'length' | 'align'> & { width: number }

// Storage of the built-in types a planned table is most likely to use (pg_type: typlen, typalign).
// width: a stored size to assume for a varlena when the description gives none.
const LAYOUTS: Record<string, TypeLayout> = {
  bool: { length: 1, align: 'c', width: 1 },
  int2: { length: 2, align: 's', width: 2 },
  int4: { length: 4, align: 'i', width: 4 },
  int8: { length: 8, align: 'd', width: 8 },
  oid: { length: 4, align: 'i', width: 4 },
  float4: { length: 4, align: 'i', width: 4 },
  float8: { length: 8, align: 'd', width: 8 },
  date: { length: 4, align: 'i', width: 4 },
  time: { length: 8, align: 'd', width: 8 },
  timetz: { length: 12, align: 'd', width: 12 },
  timestamp: { length: 8, align: 'd', width: 8 },
  timestamptz: { length: 8, align: 'd', width: 8 },
  interval: { length: 16, align: 'd', width: 16 },
  uuid: { length: 16, align: 'c', width: 16 },
  money: { length: 8, align: 'd', width: 8 },
  char: { length: 1, align: 'c', width: 1 },
  text: { length: -1, align: 'i', width: 17 },
  varchar: { length: -1, align: 'i', width: 17 },
  bpchar: { length: -1, align: 'i', width: 17 },
  numeric: { length: -1, align: 'i', width: 8 },
  jsonb: { length: -1, align: 'i', width: 64 },
  json: { length: -1, align: 'i', width: 64 },
  bytea: { length: -1, align: 'i', width: 33 },
  inet: { length: -1, align: 'i', width: 7 },
  point: { length: 16, align: 'd', width: 16 },
  box: { length: 32, align: 'd', width: 32 },
  // Ranges: a 1-byte header, the range type's oid, both bounds and a flags byte.
  int4range: { length: -1, align: 'i', width: 14 },
  daterange: { length: -1, align: 'i', width: 14 },
  int8range: { length: -1, align: 'd', width: 22 },
  tsrange: { length: -1, align: 'd', width: 22 },
  tstzrange: { length: -1, align: 'd', width: 22 },
  cidr: { length: -1, align: 'i', width: 7 },
}

const ALIASES: Record<string, string> = {
  boolean: 'bool',
  smallint: 'int2',
  integer: 'int4',
  int: 'int4',
  bigint: 'int8',
  real: 'float4',
  'double precision': 'float8',
  'timestamp with time zone': 'timestamptz',
  'timestamp without time zone': 'timestamp',
  'time without time zone': 'time',
  'time with time zone': 'timetz',
  'character varying': 'varchar',
  character: 'bpchar',
  decimal: 'numeric',
  serial: 'int4',
  bigserial: 'int8',
  smallserial: 'int2',
}

/** The layout of a type named as in SQL (`bigint`, `varchar(20)`, `timestamptz`), or undefined if unknown. */
export function typeLayout(name: string): TypeLayout | undefined {
  const bare = name
    .trim()
    .toLowerCase()
    .replace(/\s*\(.*\)\s*$/, '')
    .replace(/\[\]$/, '')
  if (name.trim().endsWith('[]')) return { length: -1, align: 'd', width: 40 }
  return LAYOUTS[ALIASES[bare] ?? bare]
}
