import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'

/** A fenced code block of a markdown file. */
export interface DocBlock {
  /** The markdown file, relative to the repository. */
  doc: string
  /** Line of its opening fence. */
  line: number
  language: string
  /**
   * The file a user would save it as: named on its first line (`// wal/orders-batch.mjs`,
   * `-- db/schema.sql`, `# prometheus.yml`) or by an HTML comment just before the fence
   * (`<!-- file: walcost.config.json -->`, for JSON, which has no comments). Null: a fragment.
   */
  file: string | null
  text: string
}

const FENCE = /^```(\w*)\n([\s\S]*?)^```$/gm
const NAMED_IN_BLOCK = /^(?:\/\/|--|#) ([\w./-]+\.(?:mjs|cjs|js|ts|json|sql|ya?ml))\b/
const NAMED_BEFORE = /<!-- file: ([\w./-]+) -->\s*$/

/** Every fenced block of the markdown files in `folder` (README.md's are run by the tarball test on their own). */
export async function docBlocks(root: string, folder = 'docs'): Promise<DocBlock[]> {
  const blocks: DocBlock[] = []
  for (const name of (await readdir(join(root, folder))).filter((entry) => entry.endsWith('.md')).sort()) {
    const markdown = await readFile(join(root, folder, name), 'utf8')
    for (const match of markdown.matchAll(FENCE)) {
      const before = markdown.slice(0, match.index)
      const text = match[2] ?? ''
      const file = NAMED_IN_BLOCK.exec(text)?.[1] ?? NAMED_BEFORE.exec(before)?.[1] ?? null
      blocks.push({
        doc: `${folder}/${name}`,
        line: before.split('\n').length,
        language: match[1] ?? '',
        file,
        text,
      })
    }
  }
  return blocks
}

/** A block that is a module of its own (it imports), which a user would save and run as it stands. */
export const isScript = (block: DocBlock) =>
  ['js', 'ts', 'mjs'].includes(block.language) && /^import\b/m.test(block.text)
