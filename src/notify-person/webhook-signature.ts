/**
 * The webhook's signature: HMAC-SHA256 with the shared key over `<timestamp>.<raw body>`, sent as
 * `Errand-Signature: t=<unix seconds>,v1=<hex>`. The timestamp is signed too, so a captured request
 * replayed later fails the receiver's freshness check; `verifyWebhookSignature` is that check.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const WEBHOOK_SIGNATURE_HEADER = 'errand-signature';
export const WEBHOOK_NOTICE_ID_HEADER = 'errand-notice-id';
/** How far a receiver lets the signed time stray from its own clock by default: 5 minutes. */
export const WEBHOOK_DEFAULT_TOLERANCE_SECONDS = 300;

function hmacHex(secret: string, timestamp: number, body: string | Uint8Array): string {
  const mac = createHmac('sha256', secret);
  mac.update(`${timestamp}.`);
  mac.update(body);
  return mac.digest('hex');
}

/** The header value for `body` signed at `timestampSeconds`. */
export function signWebhookBody(secret: string, timestampSeconds: number, body: string | Uint8Array): string {
  return `t=${timestampSeconds},v1=${hmacHex(secret, timestampSeconds, body)}`;
}

export type WebhookVerdict =
  | { readonly ok: true; readonly timestamp: number }
  | { readonly ok: false; readonly reason: 'malformed' | 'stale' | 'mismatch' };

export interface VerifyWebhookOptions {
  readonly secret: string;
  /** The header's value. */
  readonly header: string | undefined;
  /** The raw body as received, before any JSON parsing. */
  readonly body: string | Uint8Array;
  /** The receiver's clock, epoch milliseconds. */
  readonly nowMs: number;
  readonly toleranceSeconds?: number;
}

/** Checks a received webhook: the signature over the raw body, and a timestamp within the tolerance. */
export function verifyWebhookSignature(options: VerifyWebhookOptions): WebhookVerdict {
  const match = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/.exec(options.header ?? '');
  if (match === null) return { ok: false, reason: 'malformed' };
  const timestamp = Number(match[1]);
  const tolerance = options.toleranceSeconds ?? WEBHOOK_DEFAULT_TOLERANCE_SECONDS;
  if (Math.abs(options.nowMs / 1000 - timestamp) > tolerance) return { ok: false, reason: 'stale' };
  const expected = Buffer.from(hmacHex(options.secret, timestamp, options.body), 'hex');
  const given = Buffer.from(match[2] ?? '', 'hex');
  if (!timingSafeEqual(expected, given)) return { ok: false, reason: 'mismatch' };
  return { ok: true, timestamp };
}
