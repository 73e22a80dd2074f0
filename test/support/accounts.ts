// Accounts fixtures for tests: the accounts service, called the way the CLI does (no key, full authority).
import { AccountsService, type Actor, type KeyType, type Role } from '../../src/accounts/service.js';
import type { Database } from '../../src/db/database.js';

const service = (db: Database, plan = 'free') => new AccountsService(db, { keyCacheMs: 0, defaultPlan: plan });

export const ensureBootstrap = (db: Database, plan = 'free') => service(db, plan).ensureBootstrap();

export const createWorkspace = (db: Database, name: string, ownerId: string, plan = 'free', actor?: Actor) =>
  service(db, plan).createWorkspace(name, ownerId, actor);

export const createKey = (db: Database, input: { workspaceId: string; userId: string; type: KeyType; name?: string }, actor?: Actor) =>
  service(db).createKey(input, actor);

export const addMember = (db: Database, workspaceId: string, userId: string, role: Role, actor?: Actor) =>
  service(db).addMember(workspaceId, userId, role, actor);

export const createUser = (db: Database, email: string, opts: { name?: string; isAdmin?: boolean } = {}) =>
  service(db).createUser({ email, ...opts });
