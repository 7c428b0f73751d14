import { createHash } from 'node:crypto';
import type { DirectoryKind } from '../sources/directory';
import { normalizeDomain, normalizeProfileUrl } from '@lore/contracts';

export { normalizeDomain, normalizeProfileUrl };

/**
 * Who a directory record is (docs/agents.md, "Directory and database search"): the same company or person written
 * twice (two imports, an import and a finished list) is one record, whose id is derived from its identity.
 */

const text = (v: unknown): string => (typeof v === 'string' ? v.trim().replace(/\s+/g, ' ') : '');

/**
 * The identity key of a record, or null when the record does not say who it is: a company by its domain (or
 * website); a person by the profile URL, else by name with company (or company domain), else by name with title.
 */
export function identityKey(kind: DirectoryKind, data: Record<string, unknown>): string | null {
  if (kind === 'company') {
    const domain = normalizeDomain(text(data.domain)) || normalizeDomain(text(data.website));
    return domain ? `domain:${domain}` : null;
  }
  const profile = normalizeProfileUrl(text(data.profile_url));
  if (profile) return `profile:${profile}`;
  const name = text(data.name).toLowerCase();
  const company = text(data.company).toLowerCase() || normalizeDomain(text(data.company_domain));
  if (name && company) return `name:${name}|${company}`;
  const title = text(data.title).toLowerCase();
  return name && title ? `name:${name}|title:${title}` : null;
}

/** The stable record id of an identity key: 32 hex digits of its SHA-256 (with the kind). */
export function recordIdOf(kind: DirectoryKind, key: string): string {
  return createHash('sha256').update(`${kind}\n${key}`).digest('hex').slice(0, 32);
}
