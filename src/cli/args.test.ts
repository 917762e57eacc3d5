import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { describeFlags, type FlagSpecs, parseFlags, UsageError } from './args.js';

const specs: FlagSpecs = {
  dashboard: { type: 'boolean', description: 'serve the dashboard' },
  port: { type: 'port', placeholder: '<n>', description: 'the port' },
  home: { type: 'path', placeholder: '<dir>', description: 'the data directory' },
  cwd: { type: 'directory', placeholder: '<dir>', description: 'where commands run' },
  tasks: { type: 'count', placeholder: '<n>', description: 'how many' },
};

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function usageError(argv: string[], cwd?: string): string {
  try {
    parseFlags(argv, specs, cwd);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).exitCode).toBe(2);
    return (error as Error).message;
  }
  throw new Error(`no usage error for ${argv.join(' ')}`);
}

describe('parseFlags', () => {
  it('reads a count from 1 to 1000000 and names the flag and the value otherwise', () => {
    expect(parseFlags(['--tasks', '50'], specs).values).toEqual({ tasks: 50 });
    for (const raw of ['0', '-1', '1.5', 'many', '1000001']) {
      expect(usageError([`--tasks=${raw}`])).toBe(
        `Expected \`--tasks\` to be a positive integer no greater than 1000000, got ${JSON.stringify(raw)}`,
      );
    }
  });

  it('reads boolean, spaced and inline values; resolves paths against the working directory', () => {
    const directory = mkdtempSync(join(tmpdir(), 'errand-args-'));
    directories.push(directory);
    const parsed = parseFlags(
      ['--dashboard', '--port', '8080', '--home=data', `--cwd=${directory}`],
      specs,
      '/work',
    );
    expect(parsed).toEqual({
      help: false,
      values: { dashboard: true, port: 8080, home: '/work/data', cwd: directory },
    });
    expect(parseFlags(['-h'], specs).help).toBe(true);
  });

  it('names the flag and the value in every refusal', () => {
    const directory = mkdtempSync(join(tmpdir(), 'errand-args-'));
    directories.push(directory);
    writeFileSync(join(directory, 'file'), '');
    expect(usageError(['--verbose'])).toBe('unknown option `--verbose`');
    expect(usageError(['serve'])).toBe('unexpected argument "serve"');
    expect(usageError(['--port'])).toBe('`--port` needs a value <n>');
    expect(usageError(['--port', '--dashboard'])).toBe('`--port` needs a value <n>');
    expect(usageError(['--port', '65536'])).toBe(
      'Expected `--port` to be a port from 0 to 65535, got "65536"',
    );
    expect(usageError(['--port=-1'])).toBe('Expected `--port` to be a port from 0 to 65535, got "-1"');
    expect(usageError(['--dashboard=yes'])).toBe('`--dashboard` takes no value, got "yes"');
    expect(usageError(['--home', 'a', '--home', 'b'])).toBe('`--home` was given more than once');
    expect(usageError(['--home='])).toBe('`--home` needs a non-empty value');
    expect(usageError(['--cwd', 'missing'], directory)).toBe(
      'Expected `--cwd` to be an existing directory, got "missing" (not found)',
    );
    expect(usageError(['--cwd', 'file'], directory)).toBe(
      'Expected `--cwd` to be a directory, got "file" (not a directory)',
    );
  });

  it('reads a count as a positive integer', () => {
    const counts: FlagSpecs = { clients: { type: 'count', placeholder: '<n>', description: 'clients' } };
    expect(parseFlags(['--clients', '200'], counts).values).toEqual({ clients: 200 });
    for (const raw of ['0', '-3', '1.5', 'many', '1e3', '9999999999']) {
      expect(() => parseFlags([`--clients=${raw}`], counts)).toThrow(
        `Expected \`--clients\` to be a positive integer no greater than 1000000, got ${JSON.stringify(raw)}`,
      );
    }
  });

  it('describes the flags for the help text', () => {
    expect(describeFlags(specs).split('\n')).toEqual([
      '  --dashboard   serve the dashboard',
      '  --port <n>    the port',
      '  --home <dir>  the data directory',
      '  --cwd <dir>   where commands run',
      '  --tasks <n>   how many',
      '  --help        show this help',
    ]);
  });

  it('reads a non-negative integer and names the flag and the value when it is not one', () => {
    const integers: FlagSpecs = {
      'max-tasks': { type: 'integer', placeholder: '<n>', description: 'live tasks' },
    };
    const refused = (argv: string[]) => {
      expect(() => parseFlags(argv, integers)).toThrow(UsageError);
      return () => parseFlags(argv, integers);
    };
    expect(parseFlags(['--max-tasks', '40'], integers).values).toEqual({ 'max-tasks': 40 });
    expect(refused(['--max-tasks', '-1'])).toThrow(
      'Expected `--max-tasks` to be a non-negative integer, got "-1"',
    );
    expect(refused(['--max-tasks=2.5'])).toThrow(
      'Expected `--max-tasks` to be a non-negative integer, got "2.5"',
    );
    expect(refused(['--max-tasks=many'])).toThrow(
      'Expected `--max-tasks` to be a non-negative integer, got "many"',
    );
  });
});
