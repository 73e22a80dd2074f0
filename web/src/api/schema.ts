// The server's HTTP contract as the dashboard sees it: the types generated from GET /api/openapi.json into
// clients/ts (`npm run client:generate`), reached through the `@weft/client-schema` alias. Pages derive
// their shapes from here rather than declaring them, so a server change breaks `tsc -p web/tsconfig.json`.
import type { components, paths } from '@weft/client-schema';

export type { components, paths };

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** The operation `method` of `path` (never when the path has no such method). */
export type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

/** Paths that answer `method`. */
export type PathsWith<M extends Method> = { [P in keyof paths]: paths[P][M] extends { responses: unknown } ? P : never }[keyof paths];

type Responses<P extends keyof paths, M extends Method> = Operation<P, M> extends { responses: infer R } ? R : never;
type JsonOf<R> = R extends { content: { 'application/json': infer B } } ? B : R extends { content?: never } ? void : never;

/** The JSON body of a successful (2xx) answer. */
export type Success<P extends keyof paths, M extends Method = 'get'> = {
  [S in keyof Responses<P, M>]: S extends 200 | 201 | 202 | 204 ? JsonOf<Responses<P, M>[S]> : never;
}[keyof Responses<P, M>];

/** The JSON request body `method` of `path` takes. */
export type RequestBody<P extends keyof paths, M extends Method> = Operation<P, M> extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;

/** The `{name}` parameters of `path`. */
export type PathParams<P extends keyof paths, M extends Method> = Operation<P, M> extends { parameters: { path: infer A } } ? A : never;

/** The query parameters `method` of `path` takes. */
export type QueryParams<P extends keyof paths, M extends Method> = Operation<P, M> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

/** `data` of a `{success: true, data}` envelope (the /api/v1 routes). */
export type DataOf<P extends keyof paths, M extends Method = 'get'> = Success<P, M> extends { data: infer D } ? D : never;
