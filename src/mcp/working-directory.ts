/**
 * The working directory of an MCP connection's commands: `--cwd` when given; else the client's first
 * `file:` root that is a directory (MCP roots, asked with `roots/list` once the client is initialized
 * and again when it says its roots changed); else the directory the server was launched in.
 */
import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MAX_TIMER_DELAY_MS } from '../tasks/index.js';
import { defineOptions, type OptionsInput, option, type ResolvedOptions } from '../tasks/options.js';

export interface McpRoot {
  readonly uri: string;
  readonly name?: string | undefined;
}

export interface WorkingDirectoryLogger {
  warn(message: string, context?: Record<string, unknown>): void;
}

/** The options of `new WorkingDirectory()`. A key not declared here is rejected with `UNKNOWN_OPTION`. */
const workingDirectoryOptions = defineOptions('WorkingDirectory', {
  /** A directory that wins over the client's roots (the `--cwd` flag). */
  fixed: option.string(),
  /** The directory used when the client offers no usable root (the launch directory). */
  fallback: option.required(option.string()),
  /** How long a tool call waits for the first `roots/list` answer, and how long that request may take. */
  timeoutMs: option.required(option.integer({ min: 1, max: MAX_TIMER_DELAY_MS })),
  /** Told about roots that cannot be used and `roots/list` requests that failed. */
  logger: option.required(option.logger()),
});

/** Options of `new WorkingDirectory()`. */
export type WorkingDirectoryOptions = OptionsInput<typeof workingDirectoryOptions.rules>;

export type WorkingDirectorySource = 'fixed' | 'root' | 'launch';

export class WorkingDirectory {
  readonly #options: ResolvedOptions<typeof workingDirectoryOptions.rules>;
  #current: string;
  #source: WorkingDirectorySource;
  #settleFirst!: () => void;
  readonly #first: Promise<void>;
  #generation = 0;

  constructor(input: WorkingDirectoryOptions) {
    const options = workingDirectoryOptions.resolve(input);
    this.#options = options;
    this.#current = options.fixed ?? options.fallback;
    this.#source = options.fixed === undefined ? 'launch' : 'fixed';
    this.#first = new Promise((resolve) => {
      this.#settleFirst = resolve;
    });
    if (options.fixed !== undefined) this.#settleFirst();
  }

  /** The directory new tool calls run in. */
  get current(): string {
    return this.#current;
  }

  get source(): WorkingDirectorySource {
    return this.#source;
  }

  /** The directory the server was started for: `--cwd` when given, else the launch directory. */
  get launchKey(): string {
    return this.#options.fixed ?? this.#options.fallback;
  }

  /** Resolves once the first roots answer was applied, or after `timeoutMs`, whichever comes first. */
  whenReady(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, this.#options.timeoutMs);
      timer.unref();
      void this.#first.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** The client offers no roots: the launch directory stands. */
  useFallback(): void {
    this.#settleFirst();
  }

  /**
   * Asks the client for its roots and applies the first usable one. A failure keeps the current
   * directory (logged). Later answers win over earlier ones that arrive late.
   */
  async refresh(listRoots: () => Promise<{ roots: readonly McpRoot[] }>): Promise<void> {
    if (this.#options.fixed !== undefined) return;
    const generation = ++this.#generation;
    try {
      const { roots } = await listRoots();
      if (generation !== this.#generation) return;
      const directory = firstDirectory(roots);
      if (directory === undefined) {
        if (roots.length > 0) {
          this.#options.logger.warn('no client root is a local directory; using the launch directory', {
            roots: roots.map((root) => root.uri),
            directory: this.#options.fallback,
          });
        }
        this.#current = this.#options.fallback;
        this.#source = 'launch';
      } else {
        this.#current = directory;
        this.#source = 'root';
      }
    } catch (error) {
      this.#options.logger.warn('roots/list failed; keeping the working directory', {
        error: error instanceof Error ? error.message : String(error),
        directory: this.#current,
      });
    } finally {
      if (generation === this.#generation) this.#settleFirst();
    }
  }
}

/** The first `file:` root that names an existing directory. */
export function firstDirectory(roots: readonly McpRoot[]): string | undefined {
  for (const root of roots) {
    let path: string;
    try {
      const url = new URL(root.uri);
      if (url.protocol !== 'file:') continue;
      path = fileURLToPath(url);
    } catch {
      continue;
    }
    try {
      if (statSync(path).isDirectory()) return path;
    } catch {
      // Not there (or not readable): try the next root.
    }
  }
  return undefined;
}
