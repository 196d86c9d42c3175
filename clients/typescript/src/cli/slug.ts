/** A slug made from a display name, for the commands whose --slug may be left out. */
import { usageError } from './exit-codes.ts';

/** `Q3 Research!` -> `q3-research`; a name with too few letters or digits needs --slug. */
export function slugOf(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .slice(0, 48)
    .replace(/^-+|-+$/g, '');
  if (slug.length < 2) throw usageError(`Cannot make a slug from "${name}": pass --slug.`);
  return slug;
}
