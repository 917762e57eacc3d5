/** The clients' hook contracts around a compaction: events, outputs, and which compactions count. */
import { describe, expect, it } from 'vitest';
import {
  compactionHappens,
  formatHookOutput,
  hookEventsOf,
  momentOf,
  parseHookInput,
} from './hook-clients.js';

describe('compaction hooks', () => {
  it('maps each client’s events to the compact and context moments', () => {
    expect(momentOf('claude-code', 'PreCompact')).toBe('compact');
    expect(momentOf('claude-code', 'SessionStart')).toBe('context');
    expect(momentOf('codex', 'SessionStart')).toBe('context');
    expect(momentOf('gemini', 'PreCompress')).toBe('compact');
    // Gemini CLI's SessionStart has no compact source: Errand does not hook it.
    expect(momentOf('gemini', 'SessionStart')).toBeUndefined();
    expect(hookEventsOf('gemini')).toEqual(['AfterTool', 'BeforeAgent', 'AfterAgent', 'PreCompress']);
  });

  it('prints the digest as SessionStart context; nothing before a compaction', () => {
    expect(JSON.parse(formatHookOutput('claude-code', 'context', '<task-digest>x</task-digest>'))).toEqual({
      hookSpecificOutput: {
        hookEventName: 'SessionStart',
        additionalContext: '<task-digest>x</task-digest>',
      },
    });
    expect(formatHookOutput('codex', 'compact', 'anything')).toBe('');
  });

  it('reads source and trigger; Gemini CLI’s automatic PreCompress (every turn) is no compaction', () => {
    expect(parseHookInput('{"source":"compact","trigger":"auto"}')).toMatchObject({
      source: 'compact',
      trigger: 'auto',
    });
    expect(compactionHappens('gemini', 'auto')).toBe(false);
    expect(compactionHappens('gemini', 'manual')).toBe(true);
    expect(compactionHappens('claude-code', 'auto')).toBe(true);
  });
});
