import createClient from "openapi-fetch";

import { MemoryApiError } from "./errors.js";
import type { components, operations, paths } from "./schema.js";

type Schemas = components["schemas"];
type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;
type Body<Op extends keyof operations> = NonNullable<operations[Op]["requestBody"]>["content"]["application/json"];

export type SessionStart = Schemas["SessionStart"];
export type SessionRecord = Schemas["SessionRecord"];
export type ObservationRecord = Schemas["ObservationRecord"];
export type ObservationCompact = Schemas["ObservationCompact"];
export type ObservationRevision = Schemas["ObservationRevisionRecord"];
export type SaveResult = Schemas["SaveResult"];
export type Timeline = Schemas["Timeline"];
export type MemoryStats = Schemas["MemoryStats"];
/** Who a token is (`whoami`): its `user_id`, its account's bound `scope` (null: any), `may_act_for_any_user`. */
export type Identity = Schemas["Identity"];
/** The versioned document `export` answers (`format`, `version`, `sessions`, …). */
export type ExportDocument = Schemas["ExportDocument"];
/** What `import` takes: an export document of any version it reads (older ones lack some fields). */
export type ImportDocument = Body<"import_create">["data"];
/** Rows per kind, e.g. `{ sessions: 2, observations: 5, revisions: 1, vectors: 5 }`. */
export type Counts = Record<string, number>;

/**
 * What a read sees: one scope (that scope and the shared space), `"*"` (every scope), or a list
 * (exactly those). Writes take one scope, a string; `""` is the user's shared space.
 */
export type ReadScope = string | readonly string[];

/**
 * A point in time: ISO 8601 text with a UTC offset (`"2026-03-01T09:30:00+01:00"`, `"…Z"`) or a
 * date (`"2026-03-01"`, its midnight UTC), or a `Date` (sent as its UTC ISO string). A date-time
 * without an offset is refused (400 `naive_datetime`).
 */
export type Moment = string | Date;

/** ``T`` with its moment fields ``K`` taking a {@link Moment}. */
type WithMoments<T, K extends keyof T> = Omit<T, K> & { [P in K]?: Moment | Extract<T[P], null> };

/** A read's query parameters, with the scope as a string or a list. */
type ReadOptions<Op extends keyof operations> = Omit<Query<Op>, "scope"> & { scope?: ReadScope };

export type SessionListOptions = Omit<ReadOptions<"sessions_list">, "cursor">;
export type ObservationListOptions = WithMoments<Omit<ReadOptions<"observations_list">, "cursor">, "since" | "until">;
export type SearchOptions = WithMoments<Omit<ReadOptions<"observations_search_list">, "q">, "since" | "until" | "now">;
export type ContextOptions = WithMoments<ReadOptions<"context_list">, "since" | "until">;
export type TimelineOptions = ReadOptions<"observations_timeline_retrieve">;
export type ReadByIdOptions = ReadOptions<"observations_retrieve">;
export type DeleteOptions = Query<"observations_destroy">;
export type StatsOptions = ReadOptions<"stats_retrieve">;
export type ExportOptions = ReadOptions<"export_retrieve">;

export type StartInput = Body<"sessions_start_create">;
export type SummaryOptions = Omit<Body<"sessions_summary_create">, "summary">;
export type EndInput = Body<"sessions_end_create">;
export type SaveInput = WithMoments<Body<"observations_create">, "happened_at" | "expires_at">;
export type UpdateInput = WithMoments<Body<"observations_partial_update">, "happened_at" | "expires_at">;
export type ImportOptions = Omit<Body<"import_create">, "data">;
export type ForgetInput = Body<"forget_create">;

/** Per call: an `AbortSignal` that cancels the request (a search typed over, a page left). */
export interface CallOptions {
  signal?: AbortSignal;
}

export interface MemoryClientOptions {
  /** Where the API is mounted, e.g. `https://example.com/api/memory/`. */
  baseUrl: string;
  /** A DRF token, sent as `Authorization: Token …`. Without one, the request carries no credentials of ours. */
  token?: string;
  /**
   * Act for this user_id in every call (an agent backend's service account, which needs the
   * `ilab_memory.act_for_any_user` permission). A call's own `user_id` wins.
   */
  userId?: string;
  /** The `fetch` to use (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
  /** Extra headers for every request. */
  headers?: Record<string, string>;
}

// The schema's paths carry the demo site's mount; requests to another mount are rewritten.
const SCHEMA_PREFIX = "/api/memory/";

/**
 * The memory API over `fetch`, one method per operation, typed from the API's OpenAPI schema.
 *
 * Every method resolves to the API's answer or rejects with a {@link MemoryApiError}. Scopes and
 * `user_id` are the API's own parameters: reads take `scope` as one scope, `"*"` or a list;
 * writes take one scope in the body. List endpoints that page are async iterators. Every method
 * takes a last, optional {@link CallOptions} (`{ signal }`).
 */
export class MemoryClient {
  private readonly http;
  private readonly userId: string | undefined;

  constructor(options: MemoryClientOptions) {
    const root = new URL(options.baseUrl.endsWith("/") ? options.baseUrl : `${options.baseUrl}/`);
    const fetcher = options.fetch ?? ((request: Request) => globalThis.fetch(request));
    // The URL is measured as sent: on the API's real mount, after any rewrite below.
    const send = (request: Request) => fetcher(checkUrlLength(request));
    const headers: Record<string, string> = { Accept: "application/json", ...options.headers };
    if (options.token !== undefined) headers.Authorization = `Token ${options.token}`;
    this.http = createClient<paths>({
      baseUrl: root.origin,
      headers,
      fetch: root.pathname === SCHEMA_PREFIX ? send : (request) => remount(request, root, send),
    });
    this.userId = options.userId;
  }

  // ------------------------------------------------------------------------------ sessions

  /** Start the user's session, or reuse the active one (call it whenever the user shows up). */
  async start(input: StartInput = {}, call: CallOptions = {}): Promise<SessionStart> {
    return answer(await this.http.POST("/api/memory/sessions/start/", { body: this.body(input), signal: call.signal }));
  }

  /** Store a narrative summary on the active session without closing it. */
  async summary(summary: string, options: SummaryOptions = {}, call: CallOptions = {}): Promise<SessionRecord> {
    const body = this.body({ ...options, summary });
    return answer(await this.http.POST("/api/memory/sessions/summary/", { body, signal: call.signal }));
  }

  /** Close the active session now (a 404 `no_active_session` when there is none). */
  async end(input: EndInput = {}, call: CallOptions = {}): Promise<SessionRecord> {
    return answer(await this.http.POST("/api/memory/sessions/end/", { body: this.body(input), signal: call.signal }));
  }

  /** One session. */
  async session(id: string, options: ReadByIdOptions = {}, call: CallOptions = {}): Promise<SessionRecord> {
    const params = { path: { id }, query: this.query(options) };
    return answer(await this.http.GET("/api/memory/sessions/{id}/", { params, signal: call.signal }));
  }

  /** The user's sessions, newest started first, fetched page by page as the loop asks. */
  async *sessions(
    options: SessionListOptions = {},
    call: CallOptions = {},
  ): AsyncGenerator<SessionRecord, void, undefined> {
    yield* paged((cursor) =>
      this.http.GET("/api/memory/sessions/", { params: { query: { ...this.query(options), cursor } }, signal: call.signal }),
    );
  }

  // -------------------------------------------------------------------------- observations

  /**
   * Save a memory: created, revised (same `topic_key`) or counted as a duplicate (`action` says which).
   * `happened_at`: when what it says happened (default: now); `expires_at` or `ttl` (seconds): when
   * it expires, after which no read sees it.
   */
  async save(input: SaveInput, call: CallOptions = {}): Promise<SaveResult> {
    return answer(await this.http.POST("/api/memory/observations/", { body: this.body(input), signal: call.signal }));
  }

  /** One live observation, in full. */
  async get(id: string, options: ReadByIdOptions = {}, call: CallOptions = {}): Promise<ObservationRecord> {
    const params = { path: { id }, query: this.query(options) };
    return answer(await this.http.GET("/api/memory/observations/{id}/", { params, signal: call.signal }));
  }

  /**
   * The user's live observations, newest update first, as compact rows, page by page; `since` /
   * `until`: only those that happened in that period (`since` included, `until` not).
   */
  async *observations(
    options: ObservationListOptions = {},
    call: CallOptions = {},
  ): AsyncGenerator<ObservationCompact, void, undefined> {
    yield* paged((cursor) =>
      this.http.GET("/api/memory/observations/", { params: { query: { ...this.query(options), cursor } }, signal: call.signal }),
    );
  }

  /**
   * Change the fields given (`topic_key: null` clears it; `expires_at: null`: never expires); the
   * previous version goes to the history.
   */
  async update(id: string, input: UpdateInput, call: CallOptions = {}): Promise<ObservationRecord> {
    const init = { params: { path: { id } }, body: this.body(input), signal: call.signal };
    return answer(await this.http.PATCH("/api/memory/observations/{id}/", init));
  }

  /** Soft delete (restorable), or erase the row, its history and its index entry with `hard: true`. */
  async delete(id: string, options: DeleteOptions = {}, call: CallOptions = {}): Promise<void> {
    const query = { ...options, user_id: options.user_id ?? this.userId };
    const init = { params: { path: { id }, query }, signal: call.signal };
    answer(await this.http.DELETE("/api/memory/observations/{id}/", init));
  }

  /**
   * Hybrid search over the user's live observations, best first. `since` / `until` keep to a
   * period; a date phrase in `q` ("last week") favours what happened then, read at `now` (default:
   * the time of the request) in `time_zone` (an IANA name; default: the site's).
   */
  async search(q: string, options: SearchOptions = {}, call: CallOptions = {}): Promise<ObservationCompact[]> {
    const query = { ...this.query(options), q };
    return answer(await this.http.GET("/api/memory/observations/search/", { params: { query }, signal: call.signal }));
  }

  /** The memories a session start would return, ranked by ContextScore (`since` / `until`: of a period); touches no session. */
  async context(options: ContextOptions = {}, call: CallOptions = {}): Promise<ObservationCompact[]> {
    const params = { query: this.query(options) };
    return answer(await this.http.GET("/api/memory/context/", { params, signal: call.signal }));
  }

  /** What the same session wrote around an observation (`before`/`after` neighbours). */
  async timeline(id: string, options: TimelineOptions = {}, call: CallOptions = {}): Promise<Timeline> {
    const params = { path: { id }, query: this.query(options) };
    return answer(await this.http.GET("/api/memory/observations/{id}/timeline/", { params, signal: call.signal }));
  }

  /** An observation's earlier versions, newest first (`[]` when it never changed). */
  async revisions(id: string, options: ReadByIdOptions = {}, call: CallOptions = {}): Promise<ObservationRevision[]> {
    const params = { path: { id }, query: this.query(options) };
    return answer(await this.http.GET("/api/memory/observations/{id}/revisions/", { params, signal: call.signal }));
  }

  // ------------------------------------------------------------------------- counts, data

  /** Who the token is: the user id its calls act for when they name none, the scope its account is bound to (null: any), and whether it may name another user. */
  async whoami(call: CallOptions = {}): Promise<Identity> {
    return answer(await this.http.GET("/api/memory/me/", { signal: call.signal }));
  }

  /** Counts of sessions and memories in what the scope reads. */
  async stats(options: StatsOptions = {}, call: CallOptions = {}): Promise<MemoryStats> {
    const params = { query: this.query(options) };
    return answer(await this.http.GET("/api/memory/stats/", { params, signal: call.signal }));
  }

  /** Everything the user has (every scope unless one is named), as the versioned export document. */
  async export(options: ExportOptions = {}, call: CallOptions = {}): Promise<ExportDocument> {
    const params = { query: this.query(options) };
    return answer(await this.http.GET("/api/memory/export/", { params, signal: call.signal }));
  }

  /** Add the rows of an export document the user lacks (importing twice adds nothing). */
  async import(data: ImportDocument, options: ImportOptions = {}, call: CallOptions = {}): Promise<Counts> {
    const body = this.body({ ...options, data });
    return answer(await this.http.POST("/api/memory/import/", { body, signal: call.signal }));
  }

  /**
   * Erase the user's sessions, observations and revisions (or one scope's), in one transaction.
   * `confirm` must repeat the user_id being erased, or nothing is erased (400 `confirmation_mismatch`).
   */
  async forget(input: ForgetInput, call: CallOptions = {}): Promise<Counts> {
    return answer(await this.http.POST("/api/memory/forget/", { body: this.body(input), signal: call.signal }));
  }

  // ------------------------------------------------------------------------------- helpers

  private body<T extends { user_id?: string }>(input: T): Sent<T> {
    const userId = input.user_id ?? this.userId;
    return sent(userId === undefined ? input : { ...input, user_id: userId });
  }

  private query<T extends { scope?: ReadScope; user_id?: string }>(
    options: T,
  ): Sent<Omit<T, "scope">> & { scope?: string[] } {
    const { scope, ...rest } = options;
    const userId = options.user_id ?? this.userId;
    return {
      ...sent(rest),
      ...(userId === undefined ? {} : { user_id: userId }),
      ...(scope === undefined ? {} : { scope: typeof scope === "string" ? [scope] : [...scope] }),
    };
  }
}

/** ``T`` as sent: a `Date` becomes its ISO string. */
type Sent<T> = { [K in keyof T]: T[K] extends infer V ? (V extends Date ? string : V) : never };

/**
 * ``values`` with every `Date` as its UTC ISO string (the API reads ISO 8601). An invalid `Date`
 * goes as `"Invalid Date"`, so the API's 400 names the field rather than a `RangeError` here.
 */
function sent<T extends object>(values: T): Sent<T> {
  const entries = Object.entries(values).map(([name, value]) => [name, value instanceof Date ? iso(value) : value]);
  return Object.fromEntries(entries) as Sent<T>;
}

function iso(moment: Date): string {
  return Number.isNaN(moment.getTime()) ? String(moment) : moment.toISOString();
}

/** The data of a success, or the API's error thrown as a {@link MemoryApiError}. */
function answer<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (!result.response.ok) throw MemoryApiError.fromResponse(result.response, result.error);
  return result.data as T;
}

/** Every row of a cursor-paged list, fetching the next page only when the loop asks for it. */
async function* paged<T>(
  fetchPage: (cursor: string | undefined) => Promise<{ data?: { results: T[]; next?: string | null }; error?: unknown; response: Response }>,
): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  do {
    const page = answer(await fetchPage(cursor));
    yield* page.results;
    cursor = nextCursor(page.next);
  } while (cursor !== undefined);
}

/** The cursor of a page's `next` link, or undefined on the last page. */
function nextCursor(next: string | null | undefined): string | undefined {
  if (!next) return undefined;
  return new URL(next).searchParams.get("cursor") ?? undefined;
}

/**
 * A longer URL (path and query string) is refused before it is sent, naming its longest parameter:
 * servers refuse one with a page that names no field, and the smallest common limit is gunicorn's
 * request line (4,094 bytes with the method and the protocol). A query of 400 characters fits even
 * in a 3-byte script (each character sent as 9 bytes).
 */
export const MAX_URL_BYTES = 4000;
/** `request` as it is, or a 400 {@link MemoryApiError} when its URL is too long to send. */
function checkUrlLength(request: Request): Request {
  const url = new URL(request.url);
  const size = url.pathname.length + url.search.length;
  if (size <= MAX_URL_BYTES) return request;
  const longest = url.search.slice(1).split("&").reduce((a, b) => (b.length > a.length ? b : a));
  const name = decodeURIComponent(longest.split("=")[0]!);
  // Named as sent: the API's parameter, which is also this client's (`search(q)`), as the API names it.
  const field = name;
  const message = `makes the request's URL ${size} bytes long (encoded); the limit is ${MAX_URL_BYTES} bytes.`;
  throw new MemoryApiError(400, {
    detail: `${field}: ${message}`,
    code: "max_length",
    errors: { [field]: [message] },
    limit: MAX_URL_BYTES,
    size,
  });
}

/** The request sent to the API's real mount instead of the schema's prefix. */
async function remount(request: Request, root: URL, send: (request: Request) => Promise<Response>) {
  const url = new URL(request.url);
  url.pathname = root.pathname + url.pathname.slice(SCHEMA_PREFIX.length);
  const body = request.body === null ? undefined : await request.arrayBuffer();
  return send(new Request(url, { method: request.method, headers: request.headers, body, signal: request.signal }));
}
