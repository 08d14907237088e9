import type { components } from "./schema.js";

/** The API's error body: `detail` and `code` always, `errors` on a 400, `limit`/`size` when a bound was crossed. */
export type ErrorBody = components["schemas"]["Error"];

/**
 * Every answer of the API that is not a success: one class, whatever the status.
 *
 * `code` is the API's machine-readable code (`invalid_scope`, `scope_bound`,
 * `observation_not_found`, `not_authenticated`, …); `fieldErrors` maps each field of a 400 to its
 * messages. A body that is not the API's JSON (a proxy's HTML page) keeps the status, with the
 * code `http_<status>` and the status text as the message.
 */
export class MemoryApiError extends Error {
  override readonly name = "MemoryApiError";
  /** The HTTP status: 400, 401, 403, 404, 413, 415, 429, … */
  readonly status: number;
  /** The API's error code. */
  readonly code: string;
  /** Field name → messages (a 400's `errors`); empty otherwise. */
  readonly fieldErrors: Readonly<Record<string, readonly string[]>>;
  /** The bound that was crossed (a too-large body, a limit out of range), when the API names it. */
  readonly limit: number | undefined;
  /** The size that crossed it, when the API names it. */
  readonly size: number | undefined;
  /** Seconds to wait before retrying, from a 429's `Retry-After`. */
  readonly retryAfter: number | undefined;
  /** The parsed body as received (or its text when it was not JSON). */
  readonly body: unknown;

  constructor(status: number, body: unknown, options: { statusText?: string; retryAfter?: number } = {}) {
    const parsed = isErrorBody(body) ? body : undefined;
    super(parsed?.detail ?? (options.statusText || `HTTP ${status}`));
    this.status = status;
    this.code = parsed?.code ?? `http_${status}`;
    this.fieldErrors = parsed?.errors ?? {};
    this.limit = parsed?.limit;
    this.size = parsed?.size;
    this.retryAfter = options.retryAfter;
    this.body = body;
  }

  /** The error for a `fetch` response that was not a success, with its body already read. */
  static fromResponse(response: Response, body: unknown): MemoryApiError {
    const retryAfter = Number.parseInt(response.headers.get("Retry-After") ?? "", 10);
    // Every 404 of the API is its JSON with a code: another one is the site's, for a baseUrl
    // that is not where the API is mounted.
    const statusText = response.status === 404 && !isErrorBody(body) ? notTheApi(response.url) : response.statusText;
    return new MemoryApiError(response.status, body, {
      statusText,
      retryAfter: Number.isNaN(retryAfter) ? undefined : retryAfter,
    });
  }
}

function notTheApi(url: string): string {
  return (
    `No memory API at ${url || "this URL"}. baseUrl must be the API's mount, where the site includes ` +
    "ilab_memory.api.urls (http://127.0.0.1:8000/api/memory/ on the demo site)."
  );
}

function isErrorBody(body: unknown): body is ErrorBody {
  if (typeof body !== "object" || body === null) return false;
  const { detail, code } = body as Record<string, unknown>;
  return typeof detail === "string" && typeof code === "string";
}
