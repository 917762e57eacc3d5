import { describe, expect, it } from 'vitest';
import { generateAccessToken, tokenMatches } from './access-token.js';

describe('access tokens', () => {
  it('are 32 random bytes in base64url', () => {
    const tokens = new Set(Array.from({ length: 50 }, generateAccessToken));
    expect(tokens.size).toBe(50);
    for (const token of tokens) expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('match only the exact token, whatever the length presented', () => {
    const token = generateAccessToken();
    expect(tokenMatches(token, token)).toBe(true);
    expect(tokenMatches(token, `${token}x`)).toBe(false);
    expect(tokenMatches(token, token.slice(1))).toBe(false);
    expect(tokenMatches(token, '')).toBe(false);
    expect(tokenMatches(token, undefined)).toBe(false);
  });
});
