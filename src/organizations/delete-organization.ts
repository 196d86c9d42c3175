/**
 * The deletion of an organization, shared by its owner's route (auth.organization.delete) and the
 * platform admin's procedure (admin.organizations.delete): confirmed by slug, refused while a
 * subscription is live, audited before the cascade, and its stored objects deleted after the commit.
 */
import type { Database } from '../db/connection.ts';
import type { StorageDriver } from '../storage/driver.ts';
import type { Principal } from '../auth/principal.ts';
import type { Logger } from '../logger.ts';
import { writeAudit } from '../audit/store.ts';
import { ApiError } from '../contract/errors.ts';
import { deleteObjectsBestEffort } from '../storage/delete-objects.ts';
import { liveSubscription } from '../billing/subscriptions-store.ts';
import { deleteOrganization, documentKeysOf, lockOrganization } from './store.ts';

export interface OrganizationDeletion {
  organizationId: string;
  confirmSlug: string;
  actor: Principal;
}

/** Deletes the organization; answers how many stored objects went and how many survived (each logged). */
export async function deleteOrganizationEverywhere(
  services: { db: Database; storage: StorageDriver; now(): Date },
  log: Logger,
  deletion: OrganizationDeletion,
): Promise<{ deleted: number; failed: number }> {
  const now = services.now();
  const keys = await services.db.sql.begin(async (tx) => {
    // The row lock also holds off a subscription being created for it meanwhile (its foreign key waits).
    const organization = await lockOrganization(tx, deletion.organizationId);
    if (!organization || organization.slug !== deletion.confirmSlug) {
      throw new ApiError('NOT_FOUND', { message: "The confirmation does not match the organization's slug." });
    }
    // A subscription that still bills (or may bill again) must be canceled first.
    if (await liveSubscription(tx, organization.id)) throw new ApiError('PRECONDITION_FAILED', { message: 'The organization has a live subscription: cancel it first.' });
    // Platform-level (no organization_id), written before the cascade, so it outlives the organization.
    await writeAudit(
      tx,
      { organizationId: null, action: 'organization.deleted', actor: deletion.actor, targetType: 'organization', targetId: organization.id, metadata: { name: organization.name, slug: organization.slug } },
      now,
    );
    // Documents' bytes live outside the database: their keys are collected before the cascade
    // and the objects deleted after the commit (best effort, like workspaces.delete).
    const objects = await documentKeysOf(tx, organization.id);
    await deleteOrganization(tx, organization.id);
    return objects;
  });
  return deleteObjectsBestEffort(services.storage, keys, log, { organizationId: deletion.organizationId });
}
