import type { Principal } from '../../application/principal';
import type { UploadPart } from '../../application/uploads';
import { DEFAULT_CONNECTOR_FILE_LIMITS, type ConnectorFileLimits } from '../../domain/connector-files';
import { ADMIN_WRITE, MANAGE_PREFIX, adminWrites } from '../manage';
import { withFileParts } from '../multipart';
import { CORE_SECURITY, SPEC_INPUT, detail, route, validationErrorView, type CoreGuard } from '../route';
import { CONNECTOR_FILES_BODY, connectorFileUploadView, tenantQuery } from './schema';

export interface ConnectorFileRouteDeps {
  guard: CoreGuard;
  files: {
    limits: ConnectorFileLimits;
    upload(p: Principal, parts: AsyncIterable<UploadPart>): Promise<string[]>;
    /** The refusal of an upload with more files than one may hold (spec 2's 422). */
    tooMany(max: number): Error;
  };
}

/**
 * Files for `file` connectors (our design; spec 3 names the connector tools, not this shape): an administrator
 * uploads them, then creates a `file` connector whose `file_locations` are the answered paths.
 */
export function connectorFileRoutes(deps: ConnectorFileRouteDeps) {
  // The document states the defaults (it is the same for every deployment); the handler applies the deployment's limits.
  const d = DEFAULT_CONNECTOR_FILE_LIMITS;
  return [
    route({
      method: 'post', path: `${MANAGE_PREFIX}/admin/connector/file/upload`, operationId: 'uploadConnectorFiles', summary: 'Upload files for a file connector', tags: ['connectors'],
      description: `One or more file parts named \`files\` (or \`file\`): at most ${d.maxFilesPerUpload} files, ${d.maxFileBytes} bytes each and ${d.maxUploadBytes} together (the defaults; a deployment may change them). Each must be a type the shared extractor reads (text, Markdown, HTML, CSV, JSON, PDF, DOCX). The answer's \`file_paths\` are the \`file_locations\` of a \`file\` connector (POST /api/manage/admin/connector); a connector may name only files uploaded to its tenant.`,
      security: CORE_SECURITY, guards: adminWrites(deps.guard), query: tenantQuery, ...SPEC_INPUT,
      // The body streams into the blob store as it arrives: never buffered whole, never parsed as JSON.
      bodyKind: 'stream', bodyContent: CONNECTOR_FILES_BODY,
      ok: { status: 200, description: 'the files are stored: their paths, in upload order', schema: connectorFileUploadView },
      responses: {
        ...ADMIN_WRITE,
        400: detail('a malformed multipart body'),
        413: detail('a file, or the files together, larger than the limit (declared or while streaming)'),
        415: detail('the body is not multipart/form-data, or a file is of a type no file connector reads (the answer names it)'),
        422: { description: 'no file part, too many files, or an empty file: every issue in `detail`', schema: validationErrorView },
      },
      handler: async (ctx) => ({ file_paths: await withFileParts(ctx, deps.files.limits, deps.files.tooMany, (parts) => deps.files.upload(ctx.state.principal, parts)) }),
    }),
  ];
}
