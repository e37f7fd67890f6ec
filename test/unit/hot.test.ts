import { describe, expect, it } from 'vitest'
import { setColumnsOf } from '../../src/measure/hot.js'

describe('the columns an update sets', () => {
  it('reads every SET list: of UPDATE and of ON CONFLICT DO UPDATE, quoted names, commas inside calls', () => {
    expect(setColumnsOf(`update t set a = coalesce(b, 1), "Odd ""C""" = 'x,y' where id = 1`)).toEqual(['a', 'Odd "C"'])
    expect(setColumnsOf(`insert into t values (1) on conflict (id) do update set V = excluded.v returning *`)).toEqual([
      'v',
    ])
    expect(setColumnsOf('update t set a = 1; update u set b = 2 from v')).toEqual(['a', 'b'])
  })

  it('finds none in statements without a SET list', () => {
    expect(setColumnsOf('insert into t select * from u; delete from t where id < 5')).toEqual([])
  })
})
