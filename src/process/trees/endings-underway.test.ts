/** The count of endings underway: each began ending counts until it settles, once. */
import { describe, expect, it } from 'vitest';
import { endingBegan, endingsUnderway } from './endings-underway.js';

describe('endingsUnderway', () => {
  it('counts each ending from its start until its settle, a second settle changing nothing', () => {
    const before = endingsUnderway();
    const first = endingBegan();
    const second = endingBegan();
    expect(endingsUnderway()).toBe(before + 2);
    first();
    first();
    expect(endingsUnderway()).toBe(before + 1);
    second();
    expect(endingsUnderway()).toBe(before);
  });
});
