/** The dashboard's access token: random, and compared in constant time. */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const MIN_TOKEN_LENGTH = 32;

/** 32 random bytes, base64url (43 characters). */
export function generateAccessToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * Compares a presented token with the expected one without leaking, through timing, how much of it
 * matched or how long it is: both sides are hashed to the same length first.
 */
export function tokenMatches(expected: string, presented: string | undefined): boolean {
  if (presented === undefined) return false;
  const left = createHash('sha256').update(expected, 'utf8').digest();
  const right = createHash('sha256').update(presented, 'utf8').digest();
  return timingSafeEqual(left, right);
}
