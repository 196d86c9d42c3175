/** The provider behind a name: GitHub (github.ts) or Google (google.ts); what they offer is provider.ts. */
import type { OAuthClient } from '../../config.ts';
import { githubProvider } from './github.ts';
import { googleProvider } from './google.ts';
import type { ProviderName, SocialProvider } from './provider.ts';

export function socialProvider(name: ProviderName, client: OAuthClient): SocialProvider {
  return name === 'github' ? githubProvider(client) : googleProvider(client);
}
