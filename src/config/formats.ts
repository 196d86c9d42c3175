/**
 * The string formats the settings schema names (src/config/schema.ts): how Ajv checks each, the
 * error message a bad value gets (always starting with the setting's name), and how
 * docs/configuration.md states what is accepted.
 */
import { isIP } from 'node:net';

export interface SettingFormat {
  validate(value: string): boolean;
  message(name: string, value: string): string;
  /** Markdown, for the "accepted" column of docs/configuration.md. */
  accepts: string;
}

const TRUST_PROXY_WORDS = ['false', 'no', 'off', 'true', 'yes', 'on'];

export const settingFormats: Record<string, SettingFormat> = {
  'http-url': {
    validate: (value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol),
    message: (name, value) => `${name} must be an http(s) URL, got "${value}"`,
    accepts: 'an http(s) URL',
  },
  'postgres-url': {
    validate: (value) => URL.canParse(value) && /^postgres(ql)?:$/.test(new URL(value).protocol),
    // Not the value: it carries the database password.
    message: (name) => `${name} must be a postgres:// or postgresql:// URL`,
    accepts: 'a `postgres://` or `postgresql://` URL',
  },
  email: {
    validate: (value) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value),
    message: (name, value) => `${name} must be an email address, got "${value}"`,
    accepts: 'an email address',
  },
  /** A bare origin: scheme, host, port (a trailing slash is dropped). */
  origin: {
    validate: (value) => URL.canParse(value) && new URL(value).origin === value.replace(/\/$/, ''),
    message: (name, value) => `${name} must list origins like https://app.example.com, got "${value}"`,
    accepts: 'origins like `https://app.example.com` (no path)',
  },
  /** TRUST_PROXY (see Config.trustProxy in src/config.ts), in any case. */
  'trust-proxy': {
    validate: (value) => {
      const lower = value.toLowerCase();
      if (TRUST_PROXY_WORDS.includes(lower)) return true;
      if (/^\d+$/.test(lower)) return Number(lower) <= 32;
      return proxyList(lower).every(isProxyAddress);
    },
    message: (name, value) => {
      const lower = value.toLowerCase();
      if (/^\d+$/.test(lower)) return `${name} must be at most 32 hops, got "${lower}"`;
      const item = proxyList(lower).find((entry) => !isProxyAddress(entry));
      return `${name} must be true, false, a hop count, or a list of addresses, CIDR subnets, loopback, linklocal and uniquelocal; got "${item}"`;
    },
    accepts: '`true`, `false`, a hop count up to 32, or a comma-separated list of addresses, CIDR subnets, `loopback`, `linklocal` and `uniquelocal`',
  },
};

export function proxyList(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

function isProxyAddress(item: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(item)) return true;
  const [address, bits, extra] = item.split('/');
  const family = isIP(address ?? '');
  if (family === 0 || extra !== undefined) return false;
  if (bits === undefined) return true;
  // Express also takes an IPv4 netmask after the slash (10.0.0.0/255.0.0.0).
  if (family === 4 && isIP(bits) === 4) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}
