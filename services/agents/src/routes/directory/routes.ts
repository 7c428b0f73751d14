import { AppError } from '@lore/runtime';
import { DirectorySearchRefused, type DirectoryPage } from '../../application/directory';
import type { Principal } from '../../application/principal';
import { FilterError } from '../../domain/filter';
import type { DirectoryFilter, DirectoryKind } from '../../sources/directory';
import { AGENTS_SECURITY, FAMILY, envelopeValidationError, route, type AgentsGuard } from '../route';
import { databaseSearchBody, databaseSearchView, presentSearch } from './schema';

export interface DirectoryRouteDeps {
  guard: AgentsGuard;
  search(p: Principal, kind: DirectoryKind, filter: DirectoryFilter, page: { limit: number; offset: number }): Promise<DirectoryPage>;
}

const FILTER_HELP =
  'Operators: `$eq $ne $in $nin $gt $gte $lt $lte $regex` (with `$options: "i"`) `$exists $and $or`, and implicit equality (`{ "location.country": "DE" }`). ' +
  'Dotted paths reach nested fields; an array matches when any element does; numbers compare numerically, strings as text. ' +
  'Refused with 422 body (a) naming the path: an unknown operator, a wrong operand type, nesting deeper than 8, more than 64 clauses, a regular expression longer than 256 characters or invalid.';

/** The database searches of spec 3 ("Direct database searches ... exist"): our paths and shapes, envelope family. */
export function directoryRoutes(deps: DirectoryRouteDeps) {
  const family = FAMILY.envelope;
  const search = (kind: DirectoryKind, path: string, operationId: string, what: string) =>
    route({
      method: 'post',
      path,
      operationId,
      summary: `Search the tenant's ${what} directory with an Atlas-style filter`,
      description: FILTER_HELP,
      tags: ['directory'],
      security: AGENTS_SECURITY,
      guards: deps.guard('read', 'envelope'),
      body: databaseSearchBody,
      invalid: family.invalid,
      unreadable: family.unreadable,
      ok: { status: 200, description: 'one page of matching records', schema: databaseSearchView },
      responses: { 422: { description: 'invalid body or filter: body (a), the problem under `errors` with its path (`body.filter.<path>`); a filter that ran too long: body (b)', schema: family.invalidView } },
      handler: async (ctx, { body }) => {
        try {
          const page = await deps.search(ctx.state.principal, kind, body.filter, { limit: body.limit, offset: body.offset });
          return presentSearch(page, body.limit, body.offset);
        } catch (err) {
          if (err instanceof FilterError) throw envelopeValidationError([{ path: err.path === '' ? 'filter' : `filter.${err.path}`, message: err.reason }], 'body');
          if (err instanceof DirectorySearchRefused) throw new AppError('UNPROCESSABLE', err.message);
          throw err;
        }
      },
    });
  return [
    search('company', '/company-search/database-search', 'companyDatabaseSearch', 'company'),
    search('person', '/people-search/database-search', 'peopleDatabaseSearch', 'people'),
  ];
}
