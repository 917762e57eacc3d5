/** Responses of the dashboard server: JSON bodies, stable error codes, and the headers every answer carries. */
import type { ServerResponse } from 'node:http';
import { ErrandError } from '../tasks/index.js';

/** The error codes of the HTTP API; stable, so clients can branch on them. */
export type DashboardErrorCode =
  | 'HOST_FORBIDDEN'
  | 'ORIGIN_FORBIDDEN'
  | 'TOKEN_REQUIRED'
  | 'TOKEN_INVALID'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'INVALID_PATH'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'BODY_TOO_LARGE'
  | 'INVALID_JSON'
  | 'INVALID_COMMAND'
  | 'UNKNOWN_COMMAND'
  | 'MISSING_WORK_ID'
  | 'MISSING_SESSION_ID'
  | 'INVALID_QUERY'
  | 'SESSION_NOT_FOUND'
  | 'WORK_NOT_FOUND'
  | 'OUTPUT_UNAVAILABLE'
  | 'INVALID_QUERY'
  | 'TOO_MANY_EVENT_CLIENTS'
  | 'TOO_MANY_OUTPUT_STREAMS'
  | 'TOO_MANY_OUTPUT_READERS'
  | 'SERVER_UNAVAILABLE'
  | 'INTERNAL_ERROR';

/** A request the server refuses, with its HTTP status and a stable code (`DASHBOARD_<code>` as an ErrandError). */
export class DashboardRequestError extends ErrandError {
  readonly status: number;
  readonly apiCode: DashboardErrorCode;
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    status: number,
    apiCode: DashboardErrorCode,
    message: string,
    headers: Readonly<Record<string, string>> = {},
  ) {
    super(`DASHBOARD_${apiCode}`, status >= 500 ? 'system' : 'caller', message, { context: { status } });
    this.status = status;
    this.apiCode = apiCode;
    this.headers = headers;
  }

  /** Recognises a request error by its marker and shape, across package copies. */
  static isRequestError(error: unknown): error is DashboardRequestError {
    return (
      ErrandError.isInstance(error) &&
      error.code.startsWith('DASHBOARD_') &&
      typeof (error as Partial<DashboardRequestError>).status === 'number' &&
      typeof (error as Partial<DashboardRequestError>).apiCode === 'string'
    );
  }
}

/** Headers on every response: no sniffing, no framing, no referrer (the token may be in the URL). */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
});

/** The page's content security policy: only its own script, style and API; no inline code. */
export const PAGE_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = {},
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(text)),
    'Cache-Control': 'no-store',
    ...headers,
  });
  response.end(text);
}

export function sendError(response: ServerResponse, error: DashboardRequestError): void {
  sendJson(response, error.status, { error: { code: error.apiCode, message: error.message } }, error.headers);
}
