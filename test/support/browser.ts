/**
 * The browser the dashboard's end-to-end tests drive: a Chromium-based browser found the way people
 * have one ($ERRAND_BROWSER, $CHROME_PATH, Debian's `chromium`, `chromium-browser`, Google Chrome), launched
 * headless through playwright-core (no browser download: playwright only drives what is installed).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { type ExternalRequirement, type ResolveOptions, requireExternal } from './external-requirement.js';

export const BROWSER_REQUIREMENT: ExternalRequirement = {
  name: 'Chromium-based browser',
  neededBy: "the dashboard's browser tests",
  variables: ['ERRAND_BROWSER', 'CHROME_PATH'],
  commands: ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'],
  install: 'Debian/Ubuntu: sudo apt-get install chromium; or install Google Chrome',
};

/** Flags for a quiet headless run on a machine without a GPU or a sandbox-capable kernel setup. */
export const BROWSER_ARGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The browser's path, or undefined after one skip line (an error where externals are required). */
export function findBrowser(options?: ResolveOptions): string | undefined {
  return requireExternal(BROWSER_REQUIREMENT, options);
}

export interface LaunchedBrowser {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/** A headless browser with a fresh profile directory, removed again by `close()`. */
export async function launchBrowser(
  executablePath: string,
  viewport?: { width: number; height: number },
): Promise<LaunchedBrowser> {
  const profile = await mkdtemp(join(tmpdir(), 'errand-browser-'));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath,
      headless: true,
      args: [...BROWSER_ARGS],
      ...(viewport ? { viewport } : {}),
    });
  } catch (error) {
    await rm(profile, { recursive: true, force: true });
    throw error;
  }
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
