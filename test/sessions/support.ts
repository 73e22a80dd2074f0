// Signing in over HTTP in tests: the cookie as a browser would send it back, and the CSRF token.
import { request, type TestResponse, type TestServer } from '../support/harness.js';

export interface SignedIn {
  response: TestResponse;
  /** `weft_session=<token>`, ready for a Cookie header. */
  cookie: string;
  /** The raw Set-Cookie header. */
  setCookie: string;
  csrfToken: string;
}

export async function login(t: TestServer, email: string, password: string, headers: Record<string, string> = {}): Promise<SignedIn> {
  const response = await request(`${t.url}/api/v1/auth/login`, 'POST', { email, password }, headers);
  const setCookie = response.headers.get('set-cookie') ?? '';
  return { response, setCookie, cookie: setCookie.split(';')[0] ?? '', csrfToken: response.body?.csrfToken };
}

/** Headers of a browser request made with the session: the cookie, and the CSRF token unless `csrf` is false. */
export const sessionHeaders = (s: SignedIn, csrf: string | false = s.csrfToken): Record<string, string> =>
  csrf === false ? { cookie: s.cookie } : { cookie: s.cookie, 'x-csrf-token': csrf };

/** A request made with the session only (no key). */
export const asSession = (t: TestServer, s: SignedIn, method: string, path: string, body?: unknown, csrf: string | false = s.csrfToken) =>
  request(`${t.url}${path}`, method, body, sessionHeaders(s, csrf));
