/**
 * Reads the environment against the settings schema (src/config/schema.ts) with env-schema:
 * values are validated and defaults filled in; a bad value becomes a ConfigError whose message
 * starts with the setting's name.
 *
 * Values are typed here, strictly, rather than by Ajv's `coerceTypes`, which would also take
 * `1e3` or `0x10` for an integer and not `yes`/`on` for a boolean: an integer is digits only, a
 * boolean one of 1/true/yes/on and 0/false/no/off (any case), a list is split on commas. A value
 * that does not read as its type stays a string, and the schema's type check refuses it.
 */
import { Ajv, type ErrorObject } from 'ajv';
import envSchema from 'env-schema';
import { settingFormats } from './formats.ts';
import { configSchema, settingNames, settingSchema, type SettingName, type Settings } from './schema.ts';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Env = Record<string, string | undefined>;

const TRUE = ['1', 'true', 'yes', 'on'];
const FALSE = ['0', 'false', 'no', 'off'];

let ajv: Ajv | undefined;

/** One instance, made on first use: it compiles the schema once. Options as env-schema's own, but for coerceTypes. */
function validator(): Ajv {
  if (ajv) return ajv;
  ajv = new Ajv({ allErrors: true, removeAdditional: true, useDefaults: true, coerceTypes: false, allowUnionTypes: true, addUsedSchema: false, verbose: true });
  ajv.addVocabulary(['x-default', 'x-read-when']);
  for (const [name, format] of Object.entries(settingFormats)) ajv.addFormat(name, { type: 'string', validate: format.validate });
  return ajv;
}

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
  try {
    return envSchema<Settings>({ schema: configSchema, data, env: false, ajv: validator() });
  } catch (error) {
    const first = (error as { errors?: ErrorObject[] }).errors?.[0];
    if (!first) throw error;
    throw new ConfigError(message(first, given));
  }
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
