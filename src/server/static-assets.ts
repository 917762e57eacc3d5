/**
 * The dashboard page's files, read once when the server starts. Only the listed files are served:
 * no path from a request ever reaches the file system.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrandError } from '../tasks/index.js';

export interface StaticAsset {
  readonly body: Buffer;
  readonly contentType: string;
}

/** URL path → file in the assets directory. */
const ASSET_FILES: Readonly<Record<string, readonly [file: string, contentType: string]>> = {
  '/': ['index.html', 'text/html; charset=utf-8'],
  '/index.html': ['index.html', 'text/html; charset=utf-8'],
  '/app.js': ['app.js', 'text/javascript; charset=utf-8'],
  '/conversation.js': ['conversation.js', 'text/javascript; charset=utf-8'],
  '/dom.js': ['dom.js', 'text/javascript; charset=utf-8'],
  '/notices.js': ['notices.js', 'text/javascript; charset=utf-8'],
  '/app.css': ['app.css', 'text/css; charset=utf-8'],
  '/favicon.svg': ['favicon.svg', 'image/svg+xml'],
};

export class DashboardAssetsMissingError extends ErrandError {
  constructor(directory: string, cause: unknown) {
    super(
      'DASHBOARD_ASSETS_MISSING',
      'system',
      `The dashboard page is missing from ${directory} (is the package's web/ directory installed?)`,
      { cause, context: { directory } },
    );
  }
}

export async function loadStaticAssets(directory: string): Promise<ReadonlyMap<string, StaticAsset>> {
  const assets = new Map<string, StaticAsset>();
  const cache = new Map<string, Buffer>();
  for (const [path, [file, contentType]] of Object.entries(ASSET_FILES)) {
    let body = cache.get(file);
    if (body === undefined) {
      try {
        body = await readFile(join(directory, file));
      } catch (error) {
        throw new DashboardAssetsMissingError(directory, error);
      }
      cache.set(file, body);
    }
    assets.set(path, { body, contentType });
  }
  return assets;
}
