/**
 * Reads the environment against the settings schema (src/config/schema.ts), with the Ajv validator
 * precompiled from it (generated/config-validator.cjs, codegen/config-validator.ts): values are
 * validated, unknown names dropped and defaults filled in; a bad value becomes a ConfigError whose
 * message starts with the setting's name. Precompiled, not compiled here: Ajv's compiler took
 * 0.1-0.15 s of every process's start (docs/benchmarks.md, issue 39).
 *
 * Values are typed here, strictly, rather than by Ajv's `coerceTypes`, which would also take
 * `1e3` or `0x10` for an integer and not `yes`/`on` for a boolean: an integer is digits only, a
 * boolean one of 1/true/yes/on and 0/false/no/off (any case), a list is split on commas. A value
 * that does not read as its type stays a string, and the schema's type check refuses it.
 */
import { createRequire } from 'node:module';
import type { ErrorObject } from 'ajv';
import { settingFormats } from './formats.ts';
import { settingNames, settingSchema, type SettingName, type Settings } from './schema.ts';

interface SettingsValidator {
  (data: Record<string, unknown>): boolean;
  errors?: ErrorObject[] | null;
}

const validateSettings = createRequire(import.meta.url)('../../generated/config-validator.cjs') as SettingsValidator;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Env = Record<string, string | undefined>;

const TRUE = ['1', 'true', 'yes', 'on'];
const FALSE = ['0', 'false', 'no', 'off'];

export function readSettings(env: Env): Settings {
  // An empty value (or only spaces) counts as unset.
  const given: Partial<Record<SettingName, string>> = {};
  for (const name of settingNames) {
    const value = env[name]?.trim();
    if (value) given[name] = value;
  }
  const data: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(given) as [SettingName, string][]) {
    const when = settingSchema(name)['x-read-when'];
    if (when && !Object.entries(when).every(([other, wanted]) => (wanted === true ? given[other as SettingName] !== undefined : given[other as SettingName] === wanted))) continue;
    data[name] = typed(name, value);
  }
  // Ajv fills the defaults in and drops unknown names in place.
  if (!validateSettings(data)) {
    const first = validateSettings.errors?.[0];
    throw first ? new ConfigError(message(first, given)) : new Error('the settings validator failed without an error');
  }
  return data as unknown as Settings;
}

function typed(name: SettingName, value: string): unknown {
  switch (settingSchema(name).type) {
    case 'integer':
      return /^\d+$/.test(value) ? Number(value) : value;
    case 'boolean': {
      const lower = value.toLowerCase();
      return TRUE.includes(lower) ? true : FALSE.includes(lower) ? false : value;
    }
    case 'array':
      return value
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean);
    default:
      return value;
  }
}

function message(error: ErrorObject, given: Partial<Record<SettingName, string>>): string {
  const name = error.instancePath.split('/')[1] as SettingName;
  const schema = settingSchema(name);
  const value = given[name] ?? '';
  if (schema.type === 'integer') return `${name} must be an integer from ${schema.minimum} to ${schema.maximum}, got "${value}"`;
  if (schema.type === 'boolean') return `${name} must be true or false, got "${value.toLowerCase()}"`;
  if (schema.enum) return `${name} must be one of ${schema.enum.join(', ')}, got "${value}"`;
  if (error.keyword === 'minLength') return `${name} must be at least ${schema.minLength} characters`;
  const format = error.keyword === 'format' ? settingFormats[String(error.params['format'])] : undefined;
  // For a list, the data is the item that failed.
  if (format) return format.message(name, String(error.data));
  return `${name} ${error.message ?? 'is not valid'}, got "${value}"`;
}
