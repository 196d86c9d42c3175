/**
 * What sign-in/social and the callback need from a provider: the authorization address to send
 * the browser to, and, given the code it comes back with, the person's profile. GitHub
 * (github.ts) is plain OAuth 2.0; Google (google.ts) is OpenID Connect with PKCE and a nonce;
 * providers.ts picks one by name.
 */

export type ProviderName = 'github' | 'google';

export interface ProviderProfile {
  /** The provider's stable id for the person (GitHub user id, Google `sub`). */
  accountId: string;
  /** The address the provider knows, or null when it gave none. */
  email: string | null;
  /** True only when the provider vouches that the person controls `email`. */
  emailVerified: boolean;
  name: string;
  image: string | null;
}

export interface StartedAuthorization {
  url: URL;
  state: string;
  codeVerifier?: string;
  nonce?: string;
}

export interface SocialProvider {
  start(redirectUri: string): Promise<StartedAuthorization>;
  /** Exchanges the code and reads the profile; throws when the provider refuses or answers oddly. */
  finish(options: { code: string; state: string; redirectUri: string; codeVerifier?: string; nonce?: string; iss?: string }): Promise<ProviderProfile>;
}
