-- Chat project files (spec 2 names "project file upload and upload-status polling"; the design is ours, docs/core.md
-- "Project files"): files a caller gives one of their chat projects, whose text the answers in the project's
-- sessions draw on. A file is `processing` from its upload until its text is extracted (`completed`) or it cannot
-- be read (`failed`, with the reason).
CREATE TABLE core.chat_project_files (
  tenant_id text NOT NULL,
  file_id uuid NOT NULL,
  -- Upload order (files of one upload share their time_created).
  seq bigint GENERATED ALWAYS AS IDENTITY,
  project_id integer NOT NULL,
  -- The principal that uploaded it: the project's owner.
  owner text NOT NULL,
  name text NOT NULL,
  content_type text NOT NULL,
  size_bytes bigint NOT NULL,
  status text NOT NULL DEFAULT 'processing' CHECK (status IN ('processing', 'completed', 'failed')),
  -- Why the file failed, in words for the person who uploaded it (never a path or a stack).
  error text,
  -- Which extractor read it (text, markdown, html, csv, json, pdf, docx).
  extractor text,
  -- The extracted text (its beginning, when it is longer than core keeps) and its tokens.
  text text,
  token_count integer,
  time_created timestamptz NOT NULL DEFAULT now(),
  time_updated timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, file_id),
  -- A deleted project takes its files with it.
  FOREIGN KEY (tenant_id, project_id) REFERENCES core.chat_projects (tenant_id, project_id) ON DELETE CASCADE
);
CREATE INDEX chat_project_files_project_idx ON core.chat_project_files (tenant_id, project_id, seq);

ALTER TABLE core.chat_project_files ENABLE ROW LEVEL SECURITY;
ALTER TABLE core.chat_project_files FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON core.chat_project_files USING (tenant_id = current_setting('lore.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('lore.tenant_id', true));

-- The extraction queue across tenants: ids, attempts and times only (no name, no content), so, like the outbox and
-- the index schedule, it carries no row-level security; the file itself is read and written only in its tenant's
-- transaction. A row exists while its file is `processing`. The process that accepted the upload extracts it at
-- once; `lease_until` is when that process is presumed gone, and any core process's sweep takes the file over.
CREATE TABLE core.project_file_jobs (
  tenant_id text NOT NULL,
  file_id uuid NOT NULL,
  attempts integer NOT NULL DEFAULT 1,
  lease_until timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, file_id)
);
CREATE INDEX project_file_jobs_lease_idx ON core.project_file_jobs (lease_until);
