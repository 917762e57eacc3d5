import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ExternalRequirement,
  ExternalRequirementError,
  externalsRequired,
  findExecutable,
  locateExternal,
  requireExternal,
} from './external-requirement.js';

const directories: string[] = [];

afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** A directory of fake programs: `name` → executable or not. */
function binDirectory(programs: Record<string, boolean>): string {
  const directory = mkdtempSync(join(tmpdir(), 'errand-externals-'));
  directories.push(directory);
  for (const [name, executable] of Object.entries(programs)) {
    const path = join(directory, name);
    writeFileSync(path, '#!/bin/sh\nexit 0\n');
    chmodSync(path, executable ? 0o755 : 0o644);
  }
  return directory;
}

const WIDGET: ExternalRequirement = {
  name: 'widget server',
  neededBy: 'the widget tests',
  variables: ['WIDGET_PATH', 'OTHER_WIDGET'],
  commands: ['widget-server', 'widgetd'],
  install: 'apt-get install widget',
};

describe('an external requirement', () => {
  it('is found as the first usual command on PATH, skipping ones that are not executable', () => {
    const first = binDirectory({ 'widget-server': false });
    const second = binDirectory({ widgetd: true, 'widget-server': true });
    const env = { PATH: [first, second].join(':') };
    expect(locateExternal(WIDGET, env)).toEqual({
      found: true,
      path: join(second, 'widget-server'),
      via: 'widget-server',
    });
    expect(findExecutable('widgetd', env)).toBe(join(second, 'widgetd'));
    expect(findExecutable('widget-server', { PATH: first })).toBeUndefined();
  });

  it('prefers a variable, which may name a path or a command on PATH', () => {
    const bin = binDirectory({ 'widget-server': true, 'my-widget': true });
    const env = { PATH: bin, OTHER_WIDGET: 'my-widget' };
    expect(locateExternal(WIDGET, env)).toMatchObject({ path: join(bin, 'my-widget'), via: 'OTHER_WIDGET' });
    const both = { ...env, WIDGET_PATH: join(bin, 'widget-server') };
    expect(locateExternal(WIDGET, both)).toMatchObject({
      path: join(bin, 'widget-server'),
      via: 'WIDGET_PATH',
    });
  });

  it('fails, skip or not, when a variable names something that cannot run', () => {
    const bin = binDirectory({ 'not-executable': false });
    mkdirSync(join(bin, 'a-directory'));
    for (const value of [join(bin, 'not-executable'), join(bin, 'a-directory'), join(bin, 'missing')]) {
      const env = { PATH: bin, WIDGET_PATH: value };
      expect(() => locateExternal(WIDGET, env)).toThrow(ExternalRequirementError);
      expect(() => requireExternal(WIDGET, { env, write: () => {} })).toThrow(
        `WIDGET_PATH=${JSON.stringify(value)} does not name an executable file`,
      );
    }
  });

  it('is skipped with exactly one line saying how to install it when missing', () => {
    const lines: string[] = [];
    const found = requireExternal(WIDGET, {
      env: { PATH: binDirectory({}) },
      write: (line) => lines.push(line),
    });
    expect(found).toBeUndefined();
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain('\n');
    expect(lines[0]).toBe(
      'Skipping the widget tests: no widget server found (looked for $WIDGET_PATH, $OTHER_WIDGET, widget-server, widgetd). Install one (apt-get install widget) or set WIDGET_PATH to its path.',
    );
  });

  it('answers the path and writes nothing when found', () => {
    const bin = binDirectory({ widgetd: true });
    const lines: string[] = [];
    expect(requireExternal(WIDGET, { env: { PATH: bin }, write: (line) => lines.push(line) })).toBe(
      join(bin, 'widgetd'),
    );
    expect(lines).toEqual([]);
  });

  it('is an error, not a skip, where externals are required', () => {
    const lines: string[] = [];
    const env = { PATH: binDirectory({}), ERRAND_REQUIRE_EXTERNALS: '1' };
    expect(() => requireExternal(WIDGET, { env, write: (line) => lines.push(line) })).toThrow(
      /^Cannot run the widget tests: no widget server found .* ERRAND_REQUIRE_EXTERNALS is set, so this is an error, not a skip\.$/,
    );
    expect(lines).toEqual([]);
    // Found, a requirement is no error.
    const bin = binDirectory({ widgetd: true });
    expect(requireExternal(WIDGET, { env: { PATH: bin, ERRAND_REQUIRE_EXTERNALS: '1' } })).toBe(
      join(bin, 'widgetd'),
    );
  });

  it('reads ERRAND_REQUIRE_EXTERNALS as a flag', () => {
    expect(externalsRequired({})).toBe(false);
    expect(externalsRequired({ ERRAND_REQUIRE_EXTERNALS: '' })).toBe(false);
    expect(externalsRequired({ ERRAND_REQUIRE_EXTERNALS: '0' })).toBe(false);
    expect(externalsRequired({ ERRAND_REQUIRE_EXTERNALS: 'false' })).toBe(false);
    expect(externalsRequired({ ERRAND_REQUIRE_EXTERNALS: '1' })).toBe(true);
    expect(externalsRequired({ ERRAND_REQUIRE_EXTERNALS: 'yes' })).toBe(true);
  });
});

describe('the browser requirement', () => {
  it('looks for the variables and the commands people have, and says how to install one', async () => {
    const { BROWSER_REQUIREMENT, findBrowser } = await import('./browser.js');
    const lines: string[] = [];
    expect(
      findBrowser({ env: { PATH: binDirectory({}) }, write: (line) => lines.push(line) }),
    ).toBeUndefined();
    expect(lines).toEqual([
      "Skipping the dashboard's browser tests: no Chromium-based browser found (looked for $ERRAND_BROWSER, $CHROME_PATH, chromium, chromium-browser, google-chrome, google-chrome-stable). Install one (Debian/Ubuntu: sudo apt-get install chromium; or install Google Chrome) or set ERRAND_BROWSER to its path.",
    ]);
    const bin = binDirectory({ 'google-chrome-stable': true });
    expect(locateExternal(BROWSER_REQUIREMENT, { PATH: bin })).toMatchObject({
      path: join(bin, 'google-chrome-stable'),
    });
    expect(
      locateExternal(BROWSER_REQUIREMENT, { PATH: '', CHROME_PATH: join(bin, 'google-chrome-stable') }),
    ).toMatchObject({
      via: 'CHROME_PATH',
    });
  });
});
