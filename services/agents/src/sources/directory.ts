/**
 * The company and people directory (docs/agents.md, "Directory"): a tenant's own records in PostgreSQL, fed by CSV
 * imports and finished lists, searched with Atlas-style field-path filters. List building reads it through this
 * port; the database-search routes and the MCP tools read it through the same application functions.
 */

export type DirectoryKind = 'company' | 'person';

/**
 * A record's document. Companies: name, domain, website, industry, description, location {city, region, country},
 * employees (integer), founded (year), tags (strings). People: name, title, seniority, department, company,
 * company_domain, location {city, region, country}, profile_url, email. Any other field a record was given is
 * kept and searchable by its dotted path.
 */
export type DirectoryDocument = Record<string, unknown>;

export interface DirectoryRecord {
  /** Stable id within the tenant. */
  id: string;
  kind: DirectoryKind;
  data: DirectoryDocument;
  /** Where the record came from: `csv:<list_id>`, `list:<list_id>`, or a URL. */
  source: string;
  /** When the record was last written (ISO 8601). */
  updatedAt: string;
}

/** An Atlas-style filter: `{ "location.country": "DE", employees: { $gte: 50 }, $or: [...] }`. */
export type DirectoryFilter = Record<string, unknown>;

export interface Directory {
  /** Records of the tenant matching the filter, best first (most recently updated), at most `limit`. */
  search(tenantId: string, kind: DirectoryKind, filter: DirectoryFilter, options: { limit: number; offset?: number }): Promise<DirectoryRecord[]>;
}
