/**
 * The checks in front of every request: the Host header (against DNS rebinding), the Origin and
 * fetch metadata (against cross-site requests), and the access token (constant-time).
 */
import type { IncomingMessage } from 'node:http';
import { tokenMatches } from './access-token.js';
import { DashboardRequestError } from './http-response.js';

export interface RequestGuardOptions {
  readonly host: string;
  readonly port: number;
  readonly token: string;
  readonly allowedHosts: readonly string[];
  readonly allowedOrigins: readonly string[];
}

export interface RequestGuard {
  /** Refuses a Host header that does not name this server (a rebound DNS name does not). */
  checkHost(request: IncomingMessage): void;
  /**
   * Refuses a request from a foreign Origin or, for state-changing requests, one a browser marks
   * cross-site. A request without Origin is accepted: browsers send it on every cross-origin request
   * and on every POST, so its absence means a non-browser client — which still needs the token.
   */
  checkOrigin(request: IncomingMessage): void;
  /** Requires the token, as `Authorization: Bearer <token>` or `?token=<token>`. */
  checkToken(request: IncomingMessage, url: URL): void;
}

function bracketed(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export function createRequestGuard(options: RequestGuardOptions): RequestGuard {
  const hostNames = new Set(
    ['localhost', '127.0.0.1', '[::1]', bracketed(options.host), ...options.allowedHosts.map(bracketed)].map(
      (name) => name.toLowerCase(),
    ),
  );
  const origins = new Set<string>(options.allowedOrigins.map((origin) => origin.toLowerCase()));
  for (const name of hostNames) origins.add(`http://${name}:${options.port}`);

  return {
    checkHost(request) {
      const header = (request.headers.host ?? '').toLowerCase();
      const match = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(header);
      const allowed =
        match !== null &&
        hostNames.has(match[1] as string) &&
        (match[2] === undefined ? options.port === 80 : Number(match[2]) === options.port);
      if (!allowed) {
        throw new DashboardRequestError(403, 'HOST_FORBIDDEN', 'The Host header does not name this server');
      }
    },
    checkOrigin(request) {
      const origin = request.headers.origin;
      if (origin !== undefined && !origins.has(origin.toLowerCase())) {
        throw new DashboardRequestError(403, 'ORIGIN_FORBIDDEN', 'Requests from this origin are not allowed');
      }
      const site = request.headers['sec-fetch-site'];
      if (request.method !== 'GET' && request.method !== 'HEAD' && site === 'cross-site') {
        throw new DashboardRequestError(403, 'ORIGIN_FORBIDDEN', 'Cross-site requests are not allowed');
      }
    },
    checkToken(request, url) {
      const authorization = request.headers.authorization;
      let presented: string | undefined;
      if (authorization !== undefined) {
        const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
        presented = match?.[1];
      } else {
        presented = url.searchParams.get('token') ?? undefined;
      }
      if (presented === undefined) {
        throw new DashboardRequestError(401, 'TOKEN_REQUIRED', 'An access token is required', {
          'WWW-Authenticate': 'Bearer',
        });
      }
      if (!tokenMatches(options.token, presented)) {
        throw new DashboardRequestError(401, 'TOKEN_INVALID', 'The access token is not valid', {
          'WWW-Authenticate': 'Bearer error="invalid_token"',
        });
      }
    },
  };
}
