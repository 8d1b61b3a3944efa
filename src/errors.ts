/**
 * Every failure the service names, as a class that carries its HTTP status and, for OAuth
 * failures, its RFC 6749 §5.2 error code. Handlers throw these; only the HTTP layer turns
 * them into problem+json, so no handler formats an error body itself.
 * This module imports nothing, so every layer may depend on it.
 */
export class Problem extends Error {
  readonly status: number;
  readonly detail: string;
  /** RFC 6749 §5.2 / RFC 6750 §3.1 error code, when the failure is an OAuth one. */
  readonly oauthError: string | undefined;
  /** Extra members of the problem body (RFC 9457 §3.2 extensions). */
  readonly extensions: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    detail: string,
    options: {
      oauthError?: string;
      extensions?: Record<string, unknown>;
      headers?: Record<string, string>;
    } = {},
  ) {
    super(detail);
    this.name = new.target.name;
    this.status = status;
    this.detail = detail;
    this.oauthError = options.oauthError;
    this.extensions = options.extensions ?? {};
    this.headers = options.headers ?? {};
  }
}

export class BadRequest extends Problem {
  constructor(detail: string, extensions?: Record<string, unknown>) {
    super(400, detail, { extensions });
  }
}

export class ValidationFailed extends Problem {
  constructor(errors: Record<string, string[]>) {
    super(400, 'The request body is invalid', { extensions: { errors } });
  }
}

export class InvalidRequest extends Problem {
  constructor(detail: string) {
    super(400, detail, { oauthError: 'invalid_request' });
  }
}

export class UnsupportedGrantType extends Problem {
  constructor(detail = 'Unsupported grant type') {
    super(400, detail, { oauthError: 'unsupported_grant_type' });
  }
}

export class InvalidGrant extends Problem {
  /**
   * Without a detail, "Invalid credentials", the same for every cause: a wrong username or
   * password, an unknown or inactive account and an ended session are told apart to nobody.
   * A refresh token or an authorization code is refused with what is wrong with it (unknown,
   * already used, another client's, …): that tells its holder nothing about any account.
   */
  constructor(detail = 'Invalid credentials') {
    super(400, detail, { oauthError: 'invalid_grant' });
  }
}

export class InvalidScope extends Problem {
  constructor() {
    super(400, 'Invalid scope', { oauthError: 'invalid_scope' });
  }
}

export class InvalidClient extends Problem {
  /**
   * RFC 6749 §5.2: when the client tried HTTP Basic, answer with a Basic challenge. It names
   * the error as an auth-param too (as RFC 6750 §3 does for Bearer): clients such as
   * openid-client read a challenge before the body, and find the code only there.
   */
  constructor(usedBasic: boolean) {
    super(401, 'Invalid credentials', {
      oauthError: 'invalid_client',
      headers: usedBasic
        ? { 'WWW-Authenticate': 'Basic realm="token", charset="UTF-8", error="invalid_client"' }
        : {},
    });
  }
}

export class UnauthorizedClient extends Problem {
  constructor(detail: string) {
    super(400, detail, { oauthError: 'unauthorized_client' });
  }
}

/** RFC 6749 §4.1.2.1: only `code` is answered; the implicit grant (`token`) is gone for good (RFC 9700 §2.1.2). */
export class UnsupportedResponseType extends Problem {
  constructor() {
    super(400, 'Only response_type=code is supported', { oauthError: 'unsupported_response_type' });
  }
}

/**
 * RFC 6749 §4.1.2.1: an authorization request whose client or redirect URI is wrong, or a
 * sign-in form that cannot be trusted. The person is told so on the page and never sent
 * anywhere: the redirect URI is not known to be the client's.
 */
export class InvalidAuthorizationRequest extends Problem {
  constructor(detail: string) {
    super(400, detail);
  }
}

/** RFC 6750 §3: a request without credentials gets a bare challenge, without an error code. */
export class AuthenticationRequired extends Problem {
  constructor() {
    super(401, 'Authentication required', { headers: { 'WWW-Authenticate': 'Bearer' } });
  }
}

/** RFC 6750 §3.1 invalid_token: expired, revoked, malformed or otherwise unusable. */
export class InvalidToken extends Problem {
  constructor(detail: string) {
    super(401, detail, {
      oauthError: 'invalid_token',
      headers: { 'WWW-Authenticate': `Bearer error="invalid_token", error_description="${detail}"` },
    });
  }
}

export class Forbidden extends Problem {
  constructor(detail = 'You are not allowed to do this') {
    super(403, detail);
  }
}

export class NotFound extends Problem {
  constructor(detail = 'Not found') {
    super(404, detail);
  }
}

export class MethodNotAllowed extends Problem {
  constructor(allowed: readonly string[]) {
    super(405, 'Method not allowed', { headers: { Allow: allowed.join(', ') } });
  }
}

export class Conflict extends Problem {
  constructor(detail: string) {
    super(409, detail);
  }
}

export class PayloadTooLarge extends Problem {
  constructor(limitBytes: number) {
    super(413, `The request body exceeds ${limitBytes} bytes`);
  }
}

/** The client hung up before its body arrived; the answer has no one to reach. */
export class RequestAborted extends Problem {
  constructor() {
    super(400, 'The request body was not received in full');
  }
}

export class UnsupportedMediaType extends Problem {
  constructor(contentType: string) {
    super(415, `Unsupported content type: ${contentType}`);
  }
}

export class ServiceUnavailable extends Problem {
  constructor(detail: string) {
    super(503, detail);
  }
}

/** Thrown by a store when a unique identity is already taken. */
export class DuplicateIdentity extends Conflict {
  constructor(identity: string) {
    super(`An account with identity "${identity}" already exists`);
  }
}

/**
 * A change the backend made, but fewer of its replicas confirmed in time than the change needs
 * to survive the loss of the primary: it is not a success, and the request may be retried.
 */
export class NotReplicated extends ServiceUnavailable {
  constructor(backend: string) {
    super(`The ${backend} replicas did not confirm the change in time; try again shortly`);
  }
}

/** Thrown by a store adapter when its backend cannot be reached; the HTTP layer answers 503. */
export class BackendUnavailable extends ServiceUnavailable {
  constructor(backend: string) {
    super(`The ${backend} backend is unavailable; try again shortly`);
  }
}
