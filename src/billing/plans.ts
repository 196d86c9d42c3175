/**
 * Plan limits (decisions.md, "Plans"). They are enforced only while billing is configured on the
 * deployment; until the billing work wires the payment provider in, there is no plan and nothing
 * is limited, so the lookup answers null and every check passes.
 */
export type LimitKind = 'workspaces' | 'members' | 'aiCredits' | 'storageBytes';

export interface PlanLimits {
  plan: 'free' | 'pro' | 'team';
  limits: Record<LimitKind, number>;
}

export interface PlanLookup {
  /** The organization's plan and limits, or null when billing is not configured (no limits apply). */
  limitsFor(organizationId: string): Promise<PlanLimits | null>;
}

export const unbilled: PlanLookup = {
  limitsFor: async () => null,
};
