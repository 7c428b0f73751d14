import { z } from 'zod';
import { tenantIdParam } from '../schema-parts';

/** The answer of a `file` connector upload (our design): the files' paths, for a `file` connector's `file_locations`. */
export const connectorFileUploadView = z.object({
  file_paths: z.array(z.string()).describe('where each file is kept (`connector-files/<workspace>/<memory>/<uuid>/<name>`), in upload order: the `file_locations` of a file connector'),
});

export const tenantQuery = z.object(tenantIdParam);

/** The multipart body, for the document: one or more file parts named `files` (or `file`); other parts are ignored. */
export const CONNECTOR_FILES_BODY = {
  'multipart/form-data': {
    schema: {
      type: 'object',
      properties: {
        files: {
          type: 'array',
          items: { type: 'string', format: 'binary' },
          description:
            'the files (a part named `file` counts too); each must be text, Markdown, HTML, CSV, JSON, PDF or DOCX, told from its bytes first, then its name, then its declared type',
        },
      },
      required: ['files'],
    },
  },
};
