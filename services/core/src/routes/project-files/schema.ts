import { z } from 'zod';
import type { ProjectFileRow } from '../../store/project-files';
import { intParam, iso, tenantIdParam } from '../schema-parts';

const uuid = z.uuid('must be a UUID');

/** A chat project's file and its status (our design; spec 2 names project file upload and upload-status polling). */
export const projectFileView = z.object({
  id: z.string().describe('the file id (a UUID)'),
  project_id: z.number().int(),
  name: z.string().describe('the uploaded file name'),
  content_type: z.string().describe('the type the upload declared; what the file is read as comes from its bytes first'),
  size_bytes: z.number().int(),
  status: z.enum(['processing', 'completed', 'failed']).describe('`processing` until its text is extracted (`completed`) or it cannot be read (`failed`)'),
  error: z.string().nullable().describe('why it failed'),
  token_count: z.number().int().nullable().describe('tokens of the extracted text, once completed'),
  time_created: z.string(),
  time_updated: z.string(),
});
export const projectFileListView = z.object({ files: z.array(projectFileView) });

export function presentProjectFile(f: ProjectFileRow): z.input<typeof projectFileView> {
  return {
    id: f.file_id,
    project_id: f.project_id,
    name: f.name,
    content_type: f.content_type,
    size_bytes: f.size_bytes,
    status: f.status,
    error: f.error,
    token_count: f.token_count,
    time_created: iso(f.time_created),
    time_updated: iso(f.time_updated),
  };
}

export const projectFilesParams = z.object({ project_id: intParam });
export const projectFileParams = z.object({ project_id: intParam, file_id: uuid });
export const tenantQuery = z.object(tenantIdParam);
export const fileListQuery = z.object({
  ...tenantIdParam,
  file_ids: z
    .string()
    .optional()
    .describe('comma-separated file ids: only their statuses (upload-status polling)')
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return null;
      const ids = v.split(',').map((x) => x.trim());
      if (ids.length > 100) ctx.addIssue({ code: 'custom', message: 'at most 100 file ids' });
      if (ids.some((x) => !uuid.safeParse(x).success)) ctx.addIssue({ code: 'custom', message: 'must be comma-separated UUIDs' });
      return ids;
    }),
});

/** The multipart body, for the document: one or more file parts named `files` (or `file`); other parts are ignored. */
export const UPLOAD_FILES_BODY = {
  'multipart/form-data': {
    schema: {
      type: 'object',
      properties: {
        files: {
          type: 'array',
          items: { type: 'string', format: 'binary' },
          description: 'the files (a part named `file` counts too); each is read as text, Markdown, HTML, CSV, JSON, PDF or DOCX, from its bytes first, then its name, then its declared type',
        },
      },
      required: ['files'],
    },
  },
};
