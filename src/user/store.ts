/** SQL of the user group. */
import type { Db } from '../db/db.ts';

export interface UserProfileRow {
  id: string;
  email: string;
  name: string;
  image: string | null;
  role: string | null;
  created_at: Date;
}

export async function findUserProfile(db: Db, userId: string): Promise<UserProfileRow | null> {
  const [row] = await db<UserProfileRow[]>`select id, email, name, image, role, created_at from users where id = ${userId}`;
  return row ?? null;
}
