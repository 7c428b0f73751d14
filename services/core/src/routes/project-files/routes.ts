import type { Principal } from '../../application/principal';
import type { UploadPart } from '../../application/uploads';
import { DEFAULT_PROJECT_FILE_LIMITS, type ProjectFileLimits } from '../../domain/project-files';
import type { ProjectFileRow } from '../../store/project-files';
import { withFileParts } from '../multipart';
import { CORE_PREFIX, CORE_SECURITY, SPEC_INPUT, detail, route, validationErrorView, type CoreGuard } from '../route';
import {
  UPLOAD_FILES_BODY,
  fileListQuery,
  presentProjectFile,
  projectFileListView,
  projectFileParams,
  projectFileView,
  projectFilesParams,
  tenantQuery,
} from './schema';

export interface ProjectFileRouteDeps {
  guard: CoreGuard;
  files: {
    limits: ProjectFileLimits;
    upload(p: Principal, projectId: number, parts: AsyncIterable<UploadPart>): Promise<ProjectFileRow[]>;
    list(p: Principal, projectId: number, fileIds: string[] | null): Promise<ProjectFileRow[]>;
    get(p: Principal, projectId: number, fileId: string): Promise<ProjectFileRow>;
    remove(p: Principal, projectId: number, fileId: string): Promise<void>;
    /** The refusal of an upload with more files than one may hold (spec 2's 422). */
    tooMany(max: number): Error;
  };
}

const NOT_FOUND = { 404: detail('no such project (or file) of the caller') };
const READ_ONLY = { 403: detail('the key is read-only') };

/** Files of a chat project: upload (text extracted in the background), statuses, one file, delete. */
export function projectFileRoutes(deps: ProjectFileRouteDeps) {
  const tags = ['chat projects'];
  const base = `${CORE_PREFIX}/chat/projects/:project_id/files`;
  const one = `${base}/:file_id`;
  // The document states the defaults (it is the same for every deployment); the handlers apply the deployment's limits.
  const d = DEFAULT_PROJECT_FILE_LIMITS;
  return [
    route({
      method: 'post', path: base, operationId: 'uploadChatProjectFiles', summary: 'Upload files to a chat project (text extracted in the background)', tags,
      description: `One or more file parts named \`files\` (or \`file\`): at most ${d.maxFilesPerUpload} files, ${d.maxFileBytes} bytes each and ${d.maxUploadBytes} together, and ${d.maxFilesPerProject} per project (the defaults; a deployment may change them). Each file answers \`processing\`; poll the listing (or one file) until it is \`completed\` or \`failed\`.`,
      security: CORE_SECURITY, guards: [deps.guard('write')], params: projectFilesParams, query: tenantQuery, ...SPEC_INPUT,
      // The body streams into the blob store as it arrives: never buffered whole, never parsed as JSON.
      bodyKind: 'stream', bodyContent: UPLOAD_FILES_BODY,
      ok: { status: 202, description: 'accepted: the files, each `processing`', schema: projectFileListView },
      responses: {
        ...READ_ONLY,
        ...NOT_FOUND,
        400: detail('a malformed multipart body'),
        409: detail('the project holds as many files as it may'),
        413: detail('a file, or the files together, larger than the limit (declared or while streaming)'),
        415: detail('the body is not multipart/form-data'),
        422: { description: 'no file part, too many files, or an invalid project id: every issue in `detail`', schema: validationErrorView },
      },
      handler: async (ctx, { params }) => {
        const rows = await withFileParts(ctx, deps.files.limits, deps.files.tooMany, (parts) => deps.files.upload(ctx.state.principal, params.project_id, parts));
        return { files: rows.map(presentProjectFile) };
      },
    }),
    route({
      method: 'get', path: base, operationId: 'listChatProjectFiles', summary: 'The files of a chat project and their statuses (upload-status polling)', tags,
      security: CORE_SECURITY, guards: [deps.guard('read')], params: projectFilesParams, query: fileListQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'the files, in upload order', schema: projectFileListView },
      responses: NOT_FOUND,
      handler: async (ctx, { params, query }) => ({ files: (await deps.files.list(ctx.state.principal, params.project_id, query.file_ids)).map(presentProjectFile) }),
    }),
    route({
      method: 'get', path: one, operationId: 'getChatProjectFile', summary: 'One file of a chat project and its status', tags,
      security: CORE_SECURITY, guards: [deps.guard('read')], params: projectFileParams, query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 200, description: 'the file', schema: projectFileView },
      responses: NOT_FOUND,
      handler: async (ctx, { params }) => presentProjectFile(await deps.files.get(ctx.state.principal, params.project_id, params.file_id)),
    }),
    route({
      method: 'delete', path: one, operationId: 'deleteChatProjectFile', summary: 'Delete a file of a chat project', tags,
      security: CORE_SECURITY, guards: [deps.guard('write')], params: projectFileParams, query: tenantQuery, ...SPEC_INPUT,
      ok: { status: 204, description: 'deleted' },
      responses: { ...NOT_FOUND, ...READ_ONLY },
      handler: async (ctx, { params }) => {
        await deps.files.remove(ctx.state.principal, params.project_id, params.file_id);
        ctx.status = 204;
      },
    }),
  ];
}
