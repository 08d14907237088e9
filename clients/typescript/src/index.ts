export { MAX_URL_BYTES, MemoryClient } from "./client.js";
export type * from "./client.js";
export { MemoryApiError } from "./errors.js";
export type { ErrorBody } from "./errors.js";
export type { components, operations, paths } from "./schema.js";
