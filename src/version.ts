/** The service's single package version: health, OpenAPI info.version and system status report it. */
import packageJson from '../package.json' with { type: 'json' };

export const version: string = packageJson.version;
