/** Seeded secrets for the DLP suites: every value must vanish from everything the service keeps or says. */
function nir(body: string): string {
  return `${body}${String(97 - Number(BigInt(body) % 97n)).padStart(2, '0')}`;
}

export const SEEDED_SECRETS: Array<{ kind: string; value: string; sentence: (v: string) => string }> = [
  { kind: 'card_number', value: '4111 1111 1111 1111', sentence: (v) => `The Falcon vendor card is ${v} for renewals.` },
  { kind: 'card_number', value: '5555-5555-5555-4444', sentence: (v) => `Backup Falcon card: ${v}.` },
  { kind: 'iban', value: 'GB82 WEST 1234 5698 7654 32', sentence: (v) => `Falcon payouts go to ${v} monthly.` },
  { kind: 'national_id', value: '123-45-6789', sentence: (v) => `The Falcon contractor SSN is ${v}.` },
  { kind: 'national_id', value: nir('1841276451089'), sentence: (v) => `Falcon French employee NIR ${v}.` },
  { kind: 'email', value: 'falcon.owner@example.com', sentence: (v) => `Falcon owner e-mail: ${v}.` },
  { kind: 'phone', value: '+1 415 555 0132', sentence: (v) => `Falcon on-call phone ${v}.` },
  { kind: 'api_key', value: 'AKIAIOSFODNN7EXAMPLE', sentence: (v) => `Falcon AWS key ${v} is in the vault.` },
  { kind: 'api_key', value: 'sk-proj-FalconSecret1234567890abcdEFGH', sentence: (v) => `Falcon model key ${v}.` },
  {
    kind: 'jwt',
    value: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWxjb24ifQ.c2lnbmF0dXJlLW9mLWZhbGNvbi10b2tlbg',
    sentence: (v) => `Falcon session token ${v}.`,
  },
  {
    kind: 'private_key',
    value: '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAFalconKeyMaterial\n-----END OPENSSH PRIVATE KEY-----',
    sentence: (v) => `Falcon deploy key:\n${v}\n`,
  },
  { kind: 'url_password', value: 'Falc0nDbPass!', sentence: (v) => `Falcon database: postgres://falcon:${v}@db.falcon.internal:5432/app` },
  { kind: 'secret_assignment', value: 'FalconHunter42', sentence: (v) => `Falcon admin password=${v}` },
  // Environment-variable style names (the secret word follows an underscore).
  { kind: 'secret_assignment', value: 'Falc0nDbEnvPw', sentence: (v) => `Falcon env file:\nDB_PASSWORD=${v}\n` },
  { kind: 'secret_assignment', value: 'Falc0nPostgresPw', sentence: (v) => `Falcon compose:\nPOSTGRES_PASSWORD=${v}\n` },
  { kind: 'secret_assignment', value: 'Falc0nMysqlRoot', sentence: (v) => `Falcon compose:\n  MYSQL_ROOT_PASSWORD: ${v}\n` },
  { kind: 'secret_assignment', value: 'FalconAwsSecret/K7MDENG+bPxRfiCY', sentence: (v) => `Falcon CI:\nAWS_SECRET_ACCESS_KEY=${v}\n` },
  { kind: 'secret_assignment', value: 'FalconGhActions9Tok', sentence: (v) => `Falcon CI:\nGITHUB_TOKEN=${v}\n` },
  { kind: 'url_password', value: 'Falc0nRedisPw', sentence: (v) => `Falcon cache: redis://:${v}@cache.falcon.internal:6379/0` },
  { kind: 'iban', value: 'de89 3704 0044 0532 0130 00', sentence: (v) => `Falcon rent goes to iban ${v} every month.` },
  { kind: 'phone', value: '+49 30 12345678', sentence: (v) => `Falcon Berlin desk ${v}.` },
  {
    kind: 'api_key',
    value: 'https://hooks.slack.com/services/T0FALCON1/B0FALCON2/FalconWebhookSecret0123',
    sentence: (v) => `Falcon alerts post to ${v} from the deploy job.`,
  },
  // Obfuscated values: DLP reads a normalised view (NFKC, invisible characters dropped, one line break inside a
  // card, IBAN or AWS key id joined) and masks the original characters, invisible ones and line breaks included.
  { kind: 'card_number', value: '4012 8888\n8888 1881', sentence: (v) => `Falcon spare card ${v} is blocked.` },
  { kind: 'api_key', value: 'AKIAJFALCON\nBACKUP7Q2', sentence: (v) => `Falcon backup AWS key ${v} rotates monthly.` },
  { kind: 'iban', value: 'FR14 2004 1010 0505\n0001 3M02 606', sentence: (v) => `Falcon Paris payroll goes to ${v} each month.` },
  { kind: 'email', value: 'falcon\u200B.billing@exam\u200Dple.com', sentence: (v) => `Falcon billing e-mail: ${v}.` },
  { kind: 'api_key', value: 'sk-proj-Falcon\u00ADObfuscated\u2060Key\uFEFF1234567890', sentence: (v) => `Falcon batch model key ${v}.` },
  { kind: 'card_number', value: '４２４２ ４２４２ ４２４２ ４２４２', sentence: (v) => `Falcon travel card ${v} for flights.` },
  { kind: 'email', value: 'falcon.travel＠example.com', sentence: (v) => `Falcon travel desk: ${v}.` },
  { kind: 'card_number', value: '5105.1051.0510.5100', sentence: (v) => `Falcon fuel card ${v} at the depot.` },
  { kind: 'card_number', value: '6011 \u2013 1111 \u2013 1111 \u2013 1117', sentence: (v) => `Falcon hotel card ${v} on file.` },
];

/** How many values of each kind the seeded document holds. */
export function seededKinds(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of SEEDED_SECRETS) out[s.kind] = (out[s.kind] ?? 0) + 1;
  return out;
}

export function secretDocument(): string {
  return ['# Falcon operations', 'The Falcon project is operated by the platform team.', ...SEEDED_SECRETS.map((s) => s.sentence(s.value))].join('\n\n');
}

const INVISIBLE = /[\u00AD\u200B-\u200D\u2060\uFEFF]/g;

/**
 * Fragments of each secret that are distinctive enough to search for in dumps: the value as written and as read
 * (NFKC, invisible characters dropped), digits without separators, and each line of a multi-line value (the inner
 * lines of a PEM block, each half of a value broken over a line): a partial leak must not pass as "not found".
 */
export function secretNeedles(): string[] {
  const out = new Set<string>();
  for (const s of SEEDED_SECRETS) {
    for (const form of [s.value, s.value.normalize('NFKC').replace(INVISIBLE, '')]) {
      out.add(form);
      const compact = form.replace(/[\s\u2013-]/g, '');
      if (compact.length >= 8) out.add(compact);
      if (/^[\d\s.\u2013-]+$/.test(form)) out.add(form.replace(/\D/g, ''));
      for (const line of form.split('\n')) if (line.trim().length >= 8 && !line.startsWith('-----')) out.add(line.trim());
    }
  }
  return [...out];
}

export const VAULTS = [
  {
    name: 'Finance',
    description: 'Invoices, budgets, revenue, expenses, payroll and quarterly financial reports.',
    examples: ['Q3 revenue grew 12% while operating expenses fell.', 'Invoice 443 is overdue; payment terms are net 30.'],
  },
  {
    name: 'Engineering',
    description: 'Software architecture, deployments, incidents, databases, APIs and code reviews.',
    examples: ['The API gateway deployment failed because the database migration timed out.', 'Postmortem for the Kafka incident.'],
  },
];
