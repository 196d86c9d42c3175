/** Shared pieces of the billing suites: the settings that turn billing on. */

/** Billing on, with a price per paid plan and interval; STRIPE_API_URL is added where Stripe is called. */
export const BILLING_ENV: Record<string, string> = {
  STRIPE_SECRET_KEY: 'sk_test_standin',
  STRIPE_WEBHOOK_SECRET: 'whsec_test_standin',
  STRIPE_PRICE_PRO_MONTH: 'price_pro_month',
  STRIPE_PRICE_PRO_YEAR: 'price_pro_year',
  STRIPE_PRICE_TEAM_MONTH: 'price_team_month',
  STRIPE_PRICE_TEAM_YEAR: 'price_team_year',
};
