// node-postgres' own value-to-text conversion (what it binds for each parameter); its types ship no declaration.
declare module 'pg/lib/utils' {
  export function prepareValue(value: unknown): unknown;
}
