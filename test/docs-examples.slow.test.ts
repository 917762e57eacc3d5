/**
 * Every TypeScript example in the README and in docs/ type-checks against the package as it is now, so a
 * renamed option or a changed signature cannot leave a stale example behind. Each ```ts block is a
 * module of its own; `import ... from 'errand'` (and its subpaths) resolve to the sources through the
 * package's exports map. A block whose info string says `fragment` (a type excerpt) is not checked.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const root = new URL('..', import.meta.url).pathname;

interface Example {
  readonly source: string;
  readonly line: number;
  readonly code: string;
  readonly language: string;
}

function examplesOf(file: string): Example[] {
  const lines = readFileSync(file, 'utf8').split('\n');
  const examples: Example[] = [];
  let start: number | undefined;
  let body: string[] = [];
  let language = '';
  lines.forEach((text, index) => {
    if (start === undefined) {
      const fence = /^```(\S*)(.*)$/.exec(text);
      if (fence) {
        start = index + 1;
        body = [];
        language = /\bfragment\b/.test(fence[2] ?? '')
          ? 'fragment'
          : fence[1] === 'typescript'
            ? 'ts'
            : (fence[1] ?? '');
      }
      return;
    }
    if (text.startsWith('```')) {
      examples.push({ source: relative(root, file), line: start, code: body.join('\n'), language });
      start = undefined;
      return;
    }
    body.push(text);
  });
  return examples;
}

/** `errand` and its subpaths, mapped from the exports map's declaration files to the sources. */
function sourcePaths(): Record<string, string[]> {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { types?: string }>;
  };
  const paths: Record<string, string[]> = {};
  for (const [key, target] of Object.entries(manifest.exports)) {
    const types = typeof target === 'string' ? undefined : target.types;
    if (types === undefined) continue;
    const name = key === '.' ? 'errand' : `errand/${key.slice(2)}`;
    paths[name] = [join(root, types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts'))];
  }
  return paths;
}

const documents = [
  join(root, 'README.md'),
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => join(root, 'docs', name)),
];
const blocks = documents.flatMap(examplesOf);
const examples = blocks.filter((block) => block.language === 'ts');
const directory = mkdtempSync(join(root, '.errand-test-docs-'));

afterAll(() => {
  rmSync(directory, { recursive: true, force: true });
});

describe('documentation examples', () => {
  it('finds the examples it checks', () => {
    expect(examples.length).toBeGreaterThanOrEqual(10);
  });

  it('in JSON parse', () => {
    const broken = blocks
      .filter((block) => block.language === 'json')
      .flatMap((block) => {
        try {
          JSON.parse(block.code);
          return [];
        } catch (error) {
          return [`${block.source}:${block.line}: ${(error as Error).message}`];
        }
      });
    expect(blocks.filter((block) => block.language === 'json').length).toBeGreaterThan(0);
    expect(broken).toEqual([]);
  });

  it('type-check against the current sources', () => {
    const files = examples.map((example, index) => {
      const file = join(directory, `example-${index}.ts`);
      // `export {}` makes each block a module: top-level await and its own scope.
      writeFileSync(file, `${example.code}\nexport {};\n`);
      return file;
    });
    const program = ts.createProgram(files, {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      types: ['node'],
      paths: sourcePaths(),
    });
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((diagnostic) => diagnostic.file !== undefined && files.includes(diagnostic.file.fileName))
      .map((diagnostic) => {
        const index = files.indexOf(diagnostic.file!.fileName);
        const example = examples[index]!;
        const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
        const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
        return `${example.source}:${example.line + line + 1}: ${message}`;
      });
    expect(problems).toEqual([]);
    // A whole TypeScript program over the sources: CPU-bound, over 30 s on a loaded 2-core machine.
  }, 120_000);
});
