/** The signed-in caller, resolved from the session cookie or bearer token. */
export interface Principal {
  userId: string;
  email: string;
  /** 'admin' marks a platform administrator. */
  role: string | null;
  sessionId: string;
  impersonatedBy: string | null;
}
