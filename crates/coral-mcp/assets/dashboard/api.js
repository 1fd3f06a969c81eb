// The dashboard's one way to the server: the sidecar's own POST /rpc tools and GET /health.
// The token, when the server needs one, lives in sessionStorage (this tab, until it closes) and
// travels only in the Authorization header, never in a URL.

const TOKEN_KEY = 'coral.token';

/** A refused or failed call: the HTTP status and the server's JSON answer. */
export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

let askToken = null;
let asking = null;

/** `fn(reason) -> Promise<string|null>` asks the person for the token. */
export function onTokenNeeded(fn) {
  askToken = fn;
}

export function hasToken() {
  return !!sessionStorage.getItem(TOKEN_KEY);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

function headers(json) {
  const h = {};
  if (json) h['Content-Type'] = 'application/json';
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) h.Authorization = `Bearer ${token}`;
  return h;
}

async function newToken(reason) {
  // One question at a time, however many calls were refused together.
  if (!asking) {
    asking = (async () => {
      const token = askToken ? await askToken(reason) : null;
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      return token;
    })().finally(() => {
      asking = null;
    });
  }
  return asking;
}

async function request(path, method, body) {
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(path, {
      method,
      headers: headers(body !== undefined),
      body,
      credentials: 'omit',
      cache: 'no-store',
      redirect: 'error',
    });
    let answer;
    try {
      answer = await response.json();
    } catch {
      answer = { ok: false, error: `HTTP ${response.status}` };
    }
    if (response.status === 401 && attempt < 3) {
      forgetToken();
      if (await newToken(answer.error)) continue;
    }
    if (!response.ok) throw new ApiError(response.status, answer);
    return answer;
  }
}

/** Run a registry tool; resolves to its result. */
export async function call(tool, args = {}) {
  const answer = await request('/rpc', 'POST', JSON.stringify({ tool, args }));
  return answer.result;
}

/** GET /health: name, version and the number of memories. */
export function health() {
  return request('/health', 'GET');
}
