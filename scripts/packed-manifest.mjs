// The published package.json carries no lifecycle script: npm 11 warns about a dependency's install
// scripts, and `prepare` exists only to build dist/ in a clone. `npm pack` and `npm publish` run
// prepack (`strip`: the manifest without "prepare", the original kept beside it) and postpack
// (`restore`), as pinst does for postinstall.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'

const manifest = new URL('../package.json', import.meta.url).pathname
const kept = `${manifest}.unpacked`
const mode = process.argv[2]

if (mode === 'strip') {
  if (existsSync(kept))
    throw new Error(`${kept} exists: an earlier pack did not finish; move it back to package.json first`)
  const text = readFileSync(manifest, 'utf8')
  const json = JSON.parse(text)
  writeFileSync(kept, text)
  delete json.scripts.prepare
  writeFileSync(manifest, `${JSON.stringify(json, null, 2)}\n`)
} else if (mode === 'restore') {
  if (existsSync(kept)) renameSync(kept, manifest)
} else {
  throw new Error('usage: node scripts/packed-manifest.mjs strip|restore')
}
